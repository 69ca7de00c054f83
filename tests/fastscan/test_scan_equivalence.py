"""`modelpool.fastscan`: the C scans (built by `pip install`) answer exactly as the Python ones, on reads
made of the events real upstreams send — plain deltas, finals, usage, errors, multi-line and CRLF events,
truncated ones — cut at any point."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modelpool import fastscan
from modelpool.fastscan import pure

try:
    from modelpool.fastscan import _scan
except ImportError:  # pragma: no cover - the packaging test below says why
    _scan = None  # type: ignore[assignment]

MARKER = b'"finish_reason":null'
ERROR = b'"error"'
SPECIALS = (b'"message_delta"', b'"message_stop"', b'"error"')
NULL = b',"usage":null'

EVENTS = [
    b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}],"usage":null}\n\n',
    b'data: {"choices":[{"index":0,"delta":{"content":"{"},"finish_reason":null}]}\n\n',  # an odd brace
    b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}\n\n',
    b'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":9}}\n\n',
    b'data: {"error":{"message":"overloaded"}}\n\n',
    b"data: [DONE]\n\n",
    b'data: {"choices":[{"delta":{"content":"a"},\ndata: "finish_reason":null}]}\n\n',  # two data lines
    b'event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"text":"x"}}\n\n',
    b'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":4}}\n\n',
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    b'data: {"candidates":[{"content":{"parts":[{"text":"y"}]}}]}\r\n\r\n',
    b'data: {"candidates":[{"finishReason":"STOP"}]}\r\n\r\n',
    b'data: {"thinking":"...","signature":"c2ln"}\n\n',
    b'data: {"type":"reasoning","encrypted_content":"ZW5j"}\n\n',
    b"\n\n",
    b'data: {"choices":[{"delta":{"content":"trunc',  # a cut event
]

reads = st.lists(st.sampled_from(EVENTS), max_size=12).map(b"".join)


def test_the_compiled_scans_are_built() -> None:
    # `pip install` builds them where a C compiler is (CI installs gcc); without one the Python scans run.
    assert fastscan.COMPILED and _scan is not None, "modelpool.fastscan._scan was not built: install gcc"


@pytest.mark.skipif(_scan is None, reason="the C extension is not built (test_the_compiled_scans_are_built)")
class TestSameAnswers:
    @settings(max_examples=400, deadline=None)
    @given(reads, st.integers(0, 40), st.integers(0, 900))
    def test_plain_prefix(self, data: bytes, start: int, cut: int) -> None:
        data = data[: len(data) - cut % (len(data) + 1)]
        start = min(start, len(data))
        for marker, error in ((MARKER, ERROR), (b'"x"', ERROR), (MARKER, b"nope")):
            assert _scan.plain_prefix(data, start, marker, error) == pure.plain_prefix(
                data, start, marker, error
            )

    @settings(max_examples=400, deadline=None)
    @given(reads, st.integers(0, 40))
    def test_plain_run(self, data: bytes, pos: int) -> None:
        pos = min(pos, len(data))
        for specials, sep in ((SPECIALS, b"\n\n"), ((b'"finishReason"', ERROR), b"\r\n\r\n"), ((), b"\n\n")):
            assert _scan.plain_run(data, pos, specials, sep) == pure.plain_run(data, pos, specials, sep)

    @settings(max_examples=300, deadline=None)
    @given(reads)
    def test_has_any_and_remove_all(self, data: bytes) -> None:
        needles = (b'ignature"', b'encrypted_content"')
        assert _scan.has_any(data, needles) == pure.has_any(data, needles)
        for needle in (NULL, b"\n\n", b"data: ", b""):
            assert _scan.remove_all(data, needle) == pure.remove_all(data, needle)

    @settings(max_examples=300, deadline=None)
    @given(reads, st.binary(max_size=40))
    def test_lf_only(self, data: bytes, noise: bytes) -> None:
        for sample in (data, noise + data + b"\r", b"\r\r\n\n\r" + noise):
            assert _scan.lf_only(sample) == pure.lf_only(sample)

    @settings(max_examples=300, deadline=None)
    @given(reads, st.integers(-5, 2000), st.integers(-5, 2000))
    def test_balanced(self, data: bytes, start: int, end: int) -> None:
        assert _scan.balanced(data, start, end) == pure.balanced(data, max(start, 0), max(end, 0))

    def test_long_reads_cross_the_vector_width(self) -> None:
        # The brace count runs 16 bytes a step, summed every 255 steps: reads longer than both.
        for n in (15, 16, 17, 4079, 4080, 4081, 70_000):
            data = (b"{" * n) + (b"}" * n)
            assert _scan.balanced(data, 0, len(data)) and not _scan.balanced(data, 1, len(data))
            assert _scan.balanced(data, 3, 2 * n - 3) == pure.balanced(data, 3, 2 * n - 3)

    def test_wrong_types_raise_type_error(self) -> None:
        with pytest.raises(TypeError):
            _scan.plain_prefix("text", 0, MARKER, ERROR)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            _scan.plain_run(b"x", 0, [b"a"], b"\n\n")  # type: ignore[arg-type]
