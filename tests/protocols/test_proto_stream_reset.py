"""A new upstream attempt mid-stream (before the commit point) continues the same client stream."""

from __future__ import annotations

import orjson
import pytest
from anthropic.types import RawMessageStreamEvent
from openai.types.chat import ChatCompletionChunk
from proto_helpers import (
    FACTS,
    events_of,
    facts_from_anthropic,
    load,
    sdk_anthropic_message,
    sdk_openai_chunks,
    sdk_responses_final,
)
from pydantic import TypeAdapter

from modelpool.protocols.sse import SSEEvent
from modelpool.protocols.translate_stream import StreamTranslator

anthropic_event = TypeAdapter(RawMessageStreamEvent)


def oa(delta: dict, finish: str | None = None) -> SSEEvent:
    obj = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "r1"}
    obj["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
    data = orjson.dumps(obj)
    return SSEEvent(None, data, b"data: " + data + b"\n\n")


def an(obj: dict) -> SSEEvent:
    data = orjson.dumps(obj)
    return SSEEvent(obj["type"], data, b"event: " + obj["type"].encode() + b"\ndata: " + data + b"\n\n")


# Attempt 1 of each dialect: markup, then reasoning only, then the route dies (no terminator).
FAILED_OPENAI = [oa({"role": "assistant", "content": ""}), oa({"reasoning_content": "first try, "})]
FAILED_ANTHROPIC = [
    an(
        {
            "type": "message_start",
            "message": {
                "id": "m0",
                "type": "message",
                "role": "assistant",
                "model": "c",
                "content": [],
                "usage": {"input_tokens": 5, "output_tokens": 1},
            },
        }
    ),
    an(
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
        }
    ),
    an(
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "first try, "},
        }
    ),
]
FAILED = {"openai": FAILED_OPENAI, "anthropic": FAILED_ANTHROPIC}
SECOND = {"openai": "deepseek_reasoning.sse", "anthropic": "anthropic_thinking_tools.sse"}


def run_two_attempts(client: str, first: str, second: str) -> tuple[bytes, StreamTranslator]:
    t = StreamTranslator(client, first, model="pool-x", include_usage=True, request={"model": "pool-x"})
    out = b""
    for ev in FAILED[first]:
        out += t.feed(ev)
    assert t.meaningful and not t.committed
    t.reset_upstream(second)
    for ev in events_of(load(SECOND[second])):
        out += t.feed(ev)
    assert t.upstream_done and t.attempts == 2
    t.set_metadata({"route": "b", "attempts": 2, "switched_from": "a"})
    return out + t.finish(), t


@pytest.mark.parametrize("second", ["openai", "anthropic"])
@pytest.mark.parametrize("first", ["openai", "anthropic"])
@pytest.mark.parametrize("client", ["openai", "anthropic", "responses"])
def test_second_attempt_continues_the_same_stream(client: str, first: str, second: str) -> None:
    out, t = run_two_attempts(client, first, second)
    want = FACTS["anthropic" if second == "anthropic" else "openai"](load(SECOND[second]))
    got = FACTS[client](out)
    # Reasoning of the failed attempt may stay (SPEC §3.2); answer text and tool calls are the 2nd's only.
    assert got.reasoning == "first try, " + want.reasoning
    assert (got.text, got.tools, got.signatures) == (want.text, want.tools, want.signatures)
    assert got.terminated and got.stop == want.stop
    assert t.usage is not None and t.usage["completion_tokens"] == want.usage["completion"]  # 2nd attempt's

    if client == "anthropic":
        events = [ev for ev in events_of(out) if ev.event != "ping"]
        for ev in events:
            anthropic_event.validate_python(orjson.loads(ev.data))
        kinds = [ev.event for ev in events]
        assert kinds.count("message_start") == 1
        starts = [orjson.loads(ev.data) for ev in events if ev.event == "content_block_start"]
        assert [s["index"] for s in starts] == list(range(len(starts)))
        # The failed attempt's thinking block is closed before the next attempt opens its own.
        first_stop = kinds.index("content_block_stop")
        assert first_stop < kinds.index("content_block_start", kinds.index("content_block_start") + 1)
        message = sdk_anthropic_message(out)
        assert message.content[0].type == "thinking" and message.content[0].thinking == "first try, "
        assert message.content[1].type == "thinking"  # a new block for the new attempt
    elif client == "openai":
        chunks = [orjson.loads(ev.data) for ev in events_of(out) if not ev.is_done]
        for c in chunks:
            ChatCompletionChunk.model_validate(c)
        roles = [c for c in chunks if c["choices"] and c["choices"][0]["delta"].get("role")]
        assert len(roles) == 1
        assert len({c["id"] for c in chunks}) == 1
        sdk_openai_chunks(out)
    else:
        final = sdk_responses_final(out)
        reasoning = [i for i in final.output if i.type == "reasoning"]
        assert reasoning[0].content[0].text == "first try, " and len(reasoning) >= 2
        assert final.output_text == want.text


def test_reset_after_commit_is_refused() -> None:
    t = StreamTranslator("anthropic", "openai", model="pool-x")
    t.feed(oa({"content": "answer"}))
    assert t.committed
    with pytest.raises(RuntimeError):
        t.reset_upstream("anthropic")


def test_attempt_that_only_sent_markup_leaves_no_trace() -> None:
    t = StreamTranslator("anthropic", "openai", model="pool-x")
    assert t.feed(oa({"role": "assistant", "content": ""})) == b""
    t.reset_upstream("anthropic")
    out = b""
    for ev in events_of(load("anthropic_thinking_tools.sse")):
        out += t.feed(ev)
    out += t.finish()
    direct = StreamTranslator("anthropic", "anthropic", model="pool-x")
    ref = (
        b"".join(direct.feed(ev) for ev in events_of(load("anthropic_thinking_tools.sse"))) + direct.finish()
    )
    assert facts_from_anthropic(out) == facts_from_anthropic(ref)
    assert [ev.event for ev in events_of(out)] == [ev.event for ev in events_of(ref)]


def test_failed_attempt_stop_reason_and_usage_are_forgotten() -> None:
    t = StreamTranslator("openai", "anthropic", model="pool-x", include_usage=True)
    for ev in FAILED_ANTHROPIC:
        t.feed(ev)
    t.feed(
        an({"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 99}})
    )
    t.reset_upstream("openai")
    assert t.usage is None
    out = b"".join(t.feed(ev) for ev in events_of(load("openai_include_usage.sse"))) + t.finish()
    facts = FACTS["openai"](out)
    assert facts.stop == "stop" and facts.usage == {"prompt": 21, "completion": 9, "cached": 8}


def test_unsigned_thinking_of_failed_attempt_does_not_join_next_signature() -> None:
    t = StreamTranslator("openai", "anthropic", model="pool-x")
    for ev in FAILED_ANTHROPIC:
        t.feed(ev)
    t.reset_upstream()
    out = b"".join(t.feed(ev) for ev in events_of(load("anthropic_thinking_tools.sse"))) + t.finish()
    chunks = [orjson.loads(ev.data) for ev in events_of(out) if not ev.is_done]
    side = [b for c in chunks for b in c["choices"][0]["delta"].get("thinking_blocks") or []]
    assert side[0]["thinking"] == "The user wants JSON. I'll call the json tool."


def test_parallel_calls_on_a_reused_index_stay_separate() -> None:
    t = StreamTranslator("anthropic", "openai", model="pool-x")
    out = b""
    for call_id, name, args in [("c1", "f", '{"a":1}'), ("c2", "g", '{"b":2}')]:
        tc = {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
        out += t.feed(oa({"tool_calls": [tc]}))
    out += t.feed(oa({}, "tool_calls")) + t.feed(SSEEvent(None, b"[DONE]", b"")) + t.finish()
    facts = facts_from_anthropic(out)
    assert facts.tools == [("c1", "f", {"a": 1}), ("c2", "g", {"b": 2})] and facts.stop == "tool_calls"


def test_content_parts_and_late_tool_names() -> None:
    t = StreamTranslator("openai", "openai", model="pool-x")
    out = t.feed(oa({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}))
    # arguments before the name (seen from some vLLM versions): buffered until the call can start
    out += t.feed(oa({"tool_calls": [{"index": 0, "id": "c9", "function": {"arguments": '{"x":'}}]}))
    out += t.feed(oa({"tool_calls": [{"index": 0, "function": {"name": "late", "arguments": "1}"}}]}))
    out += t.feed(oa({}, "tool_calls")) + t.finish()
    facts = FACTS["openai"](out)
    assert facts.text == "ab" and facts.tools == [("c9", "late", {"x": 1})]


@pytest.mark.parametrize(
    ("upstream", "data"),
    [
        ("openai", b"{not json"),
        ("openai", b'{"choices": [5]}'),
        ("openai", b'{"choices": [{"delta": {"content": 7}}]}'),
        ("openai", b'{"error": {"message": "quota exhausted", "code": 429}}'),
        ("anthropic", b'{"type": "content_block_delta", "index": 0, "delta": "x"}'),
        ("anthropic", b"[1, 2]"),
    ],
)
def test_bad_upstream_events_raise_upstream_stream_error(upstream: str, data: bytes) -> None:
    from modelpool.protocols.translate_stream import UpstreamStreamError

    t = StreamTranslator("anthropic", upstream, model="pool-x")
    with pytest.raises(UpstreamStreamError) as exc:
        t.feed(SSEEvent("content_block_delta" if upstream == "anthropic" else None, data, b""))
    if b"quota" in data:
        assert exc.value.message == "quota exhausted" and exc.value.status == 429
    t.reset_upstream()  # nothing was committed: the walk may go on
