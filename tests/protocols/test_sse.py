"""The SSE parser against everything real upstreams do to framing."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from modelpool.protocols.sse import SSEParser, encode_event

STREAM = (
    b'data: {"a":1}\n\n'
    b": keep-alive comment\n\n"
    b'event: message_start\ndata: {"type":"message_start"}\n\n'
    b"data: line one\ndata: line two\n\n"
    b"data: \xe4\xbd\xa0\xe5\xa5\xbd\n\n"  # 你好: split reads may cut it mid-sequence
    b"data: [DONE]\n\n"
)
EXPECTED = [
    (None, b'{"a":1}'),
    ("message_start", b'{"type":"message_start"}'),
    (None, b"line one\nline two"),
    (None, "你好".encode()),
    (None, b"[DONE]"),
]


def parse_all(chunks: list[bytes]) -> list[tuple[str | None, bytes]]:
    p = SSEParser()
    out = []
    for c in chunks:
        out.extend((e.event, e.data) for e in p.feed(c))
    out.extend((e.event, e.data) for e in p.close())
    return out


def test_whole_stream() -> None:
    assert parse_all([STREAM]) == EXPECTED


def test_crlf_and_bare_cr_line_endings() -> None:
    assert parse_all([STREAM.replace(b"\n", b"\r\n")]) == EXPECTED
    assert parse_all([STREAM.replace(b"\n", b"\r")]) == EXPECTED


def test_crlf_split_between_cr_and_lf() -> None:
    crlf = STREAM.replace(b"\n", b"\r\n")
    cut = crlf.index(b"\r\n") + 1  # between \r and \n
    assert parse_all([crlf[:cut], crlf[cut:]]) == EXPECTED


def test_missing_final_blank_line_and_missing_done() -> None:
    assert parse_all([b'data: {"x":1}\n\ndata: {"y":2}']) == [(None, b'{"x":1}'), (None, b'{"y":2}')]
    p = SSEParser()
    assert [e.data for e in p.feed(b'data: {"x":1}\n\n')] == [b'{"x":1}']
    assert p.close() == []


def test_done_flag_and_raw_bytes_are_the_frame() -> None:
    p = SSEParser()
    events = p.feed(b'data: {"x":1}\n\ndata: [DONE]\n\n')
    assert events[0].raw == b'data: {"x":1}\n\n'
    assert events[1].is_done and not events[0].is_done


def test_encode_event_round_trip() -> None:
    raw = encode_event(b'{"type":"ping"}', "ping") + encode_event(b"[DONE]")
    assert parse_all([raw]) == [("ping", b'{"type":"ping"}'), (None, b"[DONE]")]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12), st.sampled_from([b"\n", b"\r\n"])
)
def test_any_split_gives_the_same_events(cuts: list[int], newline: bytes) -> None:
    data = STREAM.replace(b"\n", newline)
    points = sorted({min(c, len(data)) for c in cuts})
    chunks, prev = [], 0
    for point in points:
        chunks.append(data[prev:point])
        prev = point
    chunks.append(data[prev:])
    assert parse_all(chunks) == EXPECTED


# ---- lazy parsing and the relay's run of plain chunks (openai_chat.plain_prefix) --------------------------

_PLAIN = b'data: {"choices":[{"delta":{"content":"hi"},"finish_reason":null}]}\n\n'
_EVENTS = [
    _PLAIN,
    b'data: {"choices":[{"delta":{"content":"a"},"finish_reason":null},'
    b'{"delta":{},"finish_reason":null}]}\n\n',  # two choices: two markers in one event
    b'data: {"choices":[{"delta":{},"finish_reason":"stop"}]}\n\n',
    b'data: {"choices":[],"usage":{"completion_tokens":3}}\n\n',
    b"data: [DONE]\n\n",
    b'data: {"error":{"message":"boom"}}\n\n',
    b": keep-alive\n\n",
    b"\n\n",
    b'data: {"choices":[{"delta":{"content":"x"},"finish_reason":null}]}\r\n\r\n',
    b"event: ping\ndata: {}\n\n",
]


def lazy_events(chunks: list[bytes]) -> list[tuple[str | None, bytes]]:
    p = SSEParser()
    out = []
    for c in chunks:
        events = p.feed_lazy(c)
        while (ev := events.next()) is not None:
            out.append((ev.event, ev.data))
    return out + [(ev.event, ev.data) for ev in p.close()]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_EVENTS), min_size=1, max_size=8), st.data())
def test_lazy_parsing_finds_the_same_events_as_feed(events: list[bytes], data: st.DataObject) -> None:
    stream = b"".join(events)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=6)))
    chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
    assert lazy_events(chunks) == parse_all(chunks)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_EVENTS), min_size=1, max_size=6), st.integers(0, 40))
def test_a_run_sent_unparsed_is_what_the_event_path_would_send(events: list[bytes], cut: int) -> None:
    """The relay sends a run of events as bytes only where the event-by-event path would have forwarded
    every one of them unchanged and in order: whole events, each with the not-final marker, no [DONE],
    no error."""
    from modelpool.protocols import openai_chat as oc

    data = b"".join(events)
    if cut:
        data = data[:-cut]  # a read that ends mid-event
    events_ = SSEParser().feed_lazy(data)
    end = oc.plain_prefix(events_.data, events_.pos)
    run = events_.take(end)
    assert events_.data.startswith(run)
    for ev in SSEParser().feed(run):
        assert not ev.is_done
        assert any(m in ev.data for m in oc.NOT_FINAL_MARKERS)
        assert b'"error"' not in ev.data
    assert run == b"".join(ev.raw for ev in SSEParser().feed(run))  # whole events, nothing dropped


def test_plain_runs() -> None:
    from modelpool.protocols import openai_chat as oc

    assert oc.plain_prefix(_PLAIN) == len(_PLAIN) and oc.plain_prefix(_PLAIN * 3) == 3 * len(_PLAIN)
    for other in _EVENTS[2:8]:
        assert oc.plain_prefix(other) == 0
        assert oc.plain_prefix(_PLAIN + other) == len(_PLAIN)  # the run stops at the first other event
        assert oc.plain_prefix(other + _PLAIN) == 0
    assert oc.plain_prefix(_PLAIN + _PLAIN[:-1]) == len(_PLAIN)  # an event cut mid-way is not in the run
    assert oc.plain_prefix(b"") == 0


def test_plain_runs_with_multi_line_events_and_an_error_later() -> None:
    """The one-line fast path and the per-event loop agree: an event of several lines carrying the marker
    is in the run; an event naming an error ends it even when it carries the marker."""
    from modelpool.protocols import openai_chat as oc

    multi = b"id: 7\n" + _PLAIN
    done = b"data: [DONE]\n\n"
    assert oc.plain_prefix(_PLAIN + multi + _PLAIN + done) == 2 * len(_PLAIN) + len(multi)
    failing = b'data: {"error":{"message":"x"},"finish_reason":null}\n\n'
    assert oc.plain_prefix(_PLAIN + failing + _PLAIN) == len(_PLAIN)
    assert oc.plain_prefix(multi + _PLAIN, len(multi)) == len(multi) + len(_PLAIN)  # from `start`
