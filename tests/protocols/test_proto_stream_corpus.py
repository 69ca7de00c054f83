"""Recorded-shape streams (tests/protocols/corpus, written from streaming.md) through every translator.

Each stream is translated into each client dialect, read back, and compared with what the upstream
said: text, reasoning, tool calls (arguments as parsed JSON), signatures, stop reason, usage. The
translated bytes must also be accepted by the official SDKs' stream parsers and event models.
"""

from __future__ import annotations

import anthropic
import openai
import orjson
import pytest
from anthropic.types import RawMessageStreamEvent
from openai.types.chat import ChatCompletionChunk
from openai.types.responses import ResponseStreamEvent
from proto_helpers import (
    FACTS,
    events_of,
    facts_from_anthropic,
    facts_from_openai,
    load,
    sdk_anthropic_message,
    sdk_openai_chunks,
    sdk_responses_final,
    translate,
)
from pydantic import TypeAdapter

from modelpool.protocols.translate_stream import StreamTranslator, UpstreamStreamError

SOURCES = {
    "openai_include_usage.sse": "openai",
    "deepseek_reasoning.sse": "openai",
    "openai_parallel_tools.sse": "openai",
    "openai_truncated_no_finish.sse": "openai",
    "anthropic_thinking_tools.sse": "anthropic",
}
CLIENTS = ("openai", "anthropic", "responses")
META = {"route": "p/m", "attempts": 1, "switched_from": None, "effort": "high"}

anthropic_event = TypeAdapter(RawMessageStreamEvent)
responses_event = TypeAdapter(ResponseStreamEvent)


def source_facts(name: str):
    data = load(name)
    facts = facts_from_anthropic(data) if SOURCES[name] == "anthropic" else facts_from_openai(data)
    return facts


@pytest.mark.parametrize("seed", [None, 1, 2, 3])
@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("name", sorted(SOURCES))
def test_translation_is_lossless(name: str, client: str, seed: int | None) -> None:
    want = source_facts(name)
    out, t = translate(load(name), SOURCES[name], client, seed=seed, include_usage=True, meta=META)
    got = FACTS[client](out)
    assert got.content() == want.content()
    assert got.stop == (want.stop or "stop")  # a stream that ended without finish_reason reads as stop
    assert got.terminated and got.error is None
    if want.usage is not None:
        assert got.usage == want.usage
        assert t.usage is not None and t.usage["completion_tokens"] == want.usage["completion"]
    assert t.committed == bool(want.text or want.tools)


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_openai_client_output_parses_with_sdk(name: str) -> None:
    out, _ = translate(load(name), SOURCES[name], "openai", include_usage=True, meta=META)
    frames = [ev for ev in events_of(out) if not ev.is_done]
    for ev in frames:
        ChatCompletionChunk.model_validate(orjson.loads(ev.data))
    assert out.endswith(b"data: [DONE]\n\n")
    chunks = sdk_openai_chunks(out)
    assert len(chunks) == len(frames)
    last = orjson.loads(frames[-1].data)
    assert last["modelpool"] == META and last["choices"] == [] and last["usage"] is not None
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == source_facts(name).text


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_anthropic_client_output_parses_with_sdk(name: str) -> None:
    out, _ = translate(load(name), SOURCES[name], "anthropic", meta=META, input_tokens=7)
    events = [ev for ev in events_of(out) if ev.event != "ping"]  # the SDK skips pings
    for ev in events:
        anthropic_event.validate_python(orjson.loads(ev.data))
    kinds = [ev.event for ev in events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    assert kinds.count("message_start") == 1
    delta = orjson.loads(events[-2].data)
    assert delta["modelpool"] == META
    message = sdk_anthropic_message(out)
    want = source_facts(name)
    text = "".join(b.text for b in message.content if b.type == "text")
    assert text == want.text
    tools = [(b.id, b.name, b.input) for b in message.content if b.type == "tool_use"]
    assert tools == want.tools
    thinking = [b for b in message.content if b.type == "thinking"]
    assert "".join(b.thinking for b in thinking) == want.reasoning
    assert [b.signature for b in thinking if b.signature] == want.signatures
    # Block indices are the positions in the final content: strictly increasing from 0.
    starts = [orjson.loads(ev.data)["index"] for ev in events if ev.event == "content_block_start"]
    assert starts == list(range(len(starts)))


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_responses_client_output_parses_with_sdk(name: str) -> None:
    out, _ = translate(load(name), SOURCES[name], "responses", meta=META, request={"model": "pool-x"})
    for ev in events_of(out):
        responses_event.validate_python(orjson.loads(ev.data))
    final = sdk_responses_final(out)
    want = source_facts(name)
    assert final.output_text == want.text
    calls = [
        (i.call_id, i.name, orjson.loads(i.arguments)) for i in final.output if i.type == "function_call"
    ]
    assert calls == want.tools
    assert final.status == "completed"
    completed = orjson.loads(events_of(out)[-1].data)
    assert completed["type"] == "response.completed" and completed["response"]["modelpool"] == META


def test_openai_usage_chunk_only_when_asked() -> None:
    out, _ = translate(load("anthropic_thinking_tools.sse"), "anthropic", "openai", meta=META)
    chunks = [orjson.loads(ev.data) for ev in events_of(out) if not ev.is_done]
    assert all(c["choices"] for c in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls" and chunks[-1]["modelpool"] == META


def test_anthropic_ping_becomes_comment_and_signature_stays_out_of_content() -> None:
    out, _ = translate(load("anthropic_thinking_tools.sse"), "anthropic", "openai")
    assert b": ping\n\n" in out
    chunks = [orjson.loads(ev.data) for ev in events_of(out) if not ev.is_done]
    content = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert "Eu8B" not in content
    side = [b for c in chunks for b in c["choices"][0]["delta"].get("thinking_blocks") or []]
    assert side == [
        {
            "type": "thinking",
            "thinking": "The user wants JSON. I'll call the json tool.",
            "signature": "Eu8BCkgIBhABGAIiQL3sig==",
        }
    ]


@pytest.mark.parametrize("client", CLIENTS)
def test_midstream_error_after_commit(client: str) -> None:
    t = StreamTranslator(client, "anthropic", model="pool-x")
    out = b""
    with pytest.raises(UpstreamStreamError) as exc:
        for ev in events_of(load("anthropic_midstream_error.sse")):
            out += t.feed(ev)
    assert exc.value.type == "overloaded_error" and exc.value.message == "Overloaded"
    assert t.committed  # text went out: no retry, the client gets an error and no terminator
    out += t.error(exc.value.message, exc.value.type)
    facts = FACTS[client](out)
    assert facts.text == "Partial answ" and facts.error == "Overloaded" and not facts.terminated
    assert b"[DONE]" not in out and b"message_stop" not in out
    if client == "openai":
        with pytest.raises(openai.APIError, match="Overloaded"):
            sdk_openai_chunks(out)
    elif client == "anthropic":
        with pytest.raises(anthropic.APIError, match="Overloaded"):
            sdk_anthropic_message(out)
        assert orjson.loads(events_of(out)[-1].data)["error"]["type"] == "overloaded_error"
    else:
        kinds = [ev.event for ev in events_of(out)]
        assert kinds[-2:] == ["error", "response.failed"]
        for ev in events_of(out):
            responses_event.validate_python(orjson.loads(ev.data))


def test_stream_without_terminator_is_not_done() -> None:
    t = StreamTranslator("anthropic", "openai", model="pool-x")
    out = b""
    for ev in events_of(load("openai_no_done.sse")):
        out += t.feed(ev)
    assert not t.upstream_done  # the relay treats this as a failure (SPEC §4)
    assert t.committed and b"No terminator" in out and b"message_stop" not in out


def test_truncated_openai_stream_ends_as_end_turn_for_anthropic() -> None:
    out, _ = translate(load("openai_truncated_no_finish.sse"), "openai", "anthropic")
    delta = [orjson.loads(ev.data) for ev in events_of(out) if ev.event == "message_delta"]
    assert delta[0]["delta"]["stop_reason"] == "end_turn"


def test_anthropic_message_start_carries_upstream_input_usage() -> None:
    out, _ = translate(load("anthropic_thinking_tools.sse"), "anthropic", "anthropic")
    start = orjson.loads(events_of(out)[0].data)
    assert start["message"]["usage"]["input_tokens"] == 849
    assert start["message"]["model"] == "pool-x"  # the client sees the pool, not the route's model


def test_nothing_is_emitted_before_the_first_meaningful_event() -> None:
    t = StreamTranslator("anthropic", "openai", model="pool-x")
    first = events_of(load("openai_include_usage.sse"))[0]  # role chunk only
    assert t.feed(first) == b"" and not t.meaningful and not t.started


def test_same_dialect_anthropic_preserves_thinking_blocks_and_stop() -> None:
    out, _ = translate(load("anthropic_thinking_tools.sse"), "anthropic", "anthropic")
    assert (
        facts_from_anthropic(out).content()
        == facts_from_anthropic(load("anthropic_thinking_tools.sse")).content()
    )


@pytest.mark.parametrize(
    ("client", "expected"), [("anthropic", b"event: ping\n"), ("openai", b": ping"), ("responses", b": ping")]
)
def test_keepalive(client: str, expected: bytes) -> None:
    t = StreamTranslator(client, "openai", model="pool-x")
    assert t.keepalive() == b""  # before the first meaningful event nothing may be sent
    t.feed(events_of(load("deepseek_reasoning.sse"))[1])
    assert t.keepalive().startswith(expected)
