"""Non-stream bodies across dialects, validated against the SDKs' response models; error shapes."""

from __future__ import annotations

import orjson
import pytest
from anthropic.types import Message
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from modelpool.protocols.translate_body import (
    reply_from_anthropic,
    reply_from_openai,
    to_anthropic,
    to_openai,
    translate_body,
    translate_error,
)

OPENAI_BODY = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "deepseek-reasoner",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Let me check.",
                "reasoning_content": "need weather",
                "tool_calls": [
                    {
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "w", "arguments": '{"city":"Oslo"}'},
                    },
                    {"id": "call_b", "type": "function", "function": {"name": "t", "arguments": "oops"}},
                ],
            },
            "logprobs": None,
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {
        "prompt_tokens": 30,
        "completion_tokens": 12,
        "total_tokens": 42,
        "prompt_tokens_details": {"cached_tokens": 10},
        "completion_tokens_details": {"reasoning_tokens": 4},
    },
}
ANTHROPIC_BODY = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-x",
    "content": [
        {"type": "thinking", "thinking": "hmm", "signature": "SIG1"},
        {"type": "redacted_thinking", "data": "REDACTED"},
        {"type": "text", "text": "Calling."},
        {"type": "tool_use", "id": "toolu_1", "name": "w", "input": {"city": "Oslo"}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 20,
        "cache_read_input_tokens": 10,
        "cache_creation_input_tokens": 5,
        "output_tokens": 12,
    },
}
META = {"route": "r", "attempts": 1}


def test_openai_to_anthropic_body() -> None:
    out = translate_body(OPENAI_BODY, "openai", "anthropic", model="pool", meta=META)
    Message.model_validate(out)
    assert [b["type"] for b in out["content"]] == ["thinking", "text", "tool_use", "tool_use"]
    assert out["content"][2]["input"] == {"city": "Oslo"}
    assert out["content"][3]["input"] == {"_raw_arguments": "oops"}
    assert out["stop_reason"] == "tool_use" and out["model"] == "pool" and out["modelpool"] == META
    assert out["usage"] == {
        "input_tokens": 20,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 10,
        "output_tokens": 12,
    }


def test_anthropic_to_openai_body() -> None:
    out = translate_body(ANTHROPIC_BODY, "anthropic", "openai", model="pool")
    ChatCompletion.model_validate(out)
    msg = out["choices"][0]["message"]
    assert msg["content"] == "Calling." and msg["reasoning_content"] == "hmm"
    assert msg["thinking_blocks"] == [
        {"type": "thinking", "thinking": "hmm", "signature": "SIG1"},
        {"type": "redacted_thinking", "data": "REDACTED"},
    ]
    assert msg["tool_calls"][0]["function"] == {"name": "w", "arguments": '{"city":"Oslo"}'}
    assert out["choices"][0]["finish_reason"] == "tool_calls"
    assert (
        out["usage"]["prompt_tokens"] == 35 and out["usage"]["prompt_tokens_details"]["cached_tokens"] == 10
    )
    assert out["usage"]["total_tokens"] == 47


def test_anthropic_openai_anthropic_body_keeps_signatures() -> None:
    there = to_openai(reply_from_anthropic(ANTHROPIC_BODY))
    back = to_anthropic(reply_from_openai(there))
    assert back["content"] == ANTHROPIC_BODY["content"]
    assert back["usage"] == ANTHROPIC_BODY["usage"] | {"cache_creation_input_tokens": 5}


@pytest.mark.parametrize(("upstream", "body"), [("openai", OPENAI_BODY), ("anthropic", ANTHROPIC_BODY)])
def test_responses_body(upstream: str, body: dict) -> None:
    request = {"model": "pool", "input": "x", "tools": [], "instructions": "be nice"}
    out = translate_body(body, upstream, "responses", model="pool", request=request, meta=META)
    resp = Response.model_validate(out)
    assert resp.status == "completed" and resp.instructions == "be nice"
    kinds = [i.type for i in resp.output]
    assert "message" in kinds and "function_call" in kinds and kinds[0] == "reasoning"
    assert resp.output_text == ("Let me check." if upstream == "openai" else "Calling.")
    assert resp.usage is not None and resp.usage.total_tokens == (42 if upstream == "openai" else 47)
    if upstream == "anthropic":
        assert resp.output[0].encrypted_content == "mp1.sig.SIG1"


@pytest.mark.parametrize(
    ("finish", "stop", "status"), [("length", "max_tokens", "incomplete"), ("stop", "end_turn", "completed")]
)
def test_stop_reason_mapping(finish: str, stop: str, status: str) -> None:
    body = {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "x"}, "finish_reason": finish}]
    }
    assert translate_body(body, "openai", "anthropic")["stop_reason"] == stop
    anth = dict(ANTHROPIC_BODY, stop_reason=stop, content=[{"type": "text", "text": "x"}])
    assert translate_body(anth, "anthropic", "openai")["choices"][0]["finish_reason"] == finish
    resp = translate_body(anth, "anthropic", "responses")
    assert resp["status"] == status


def test_error_translation() -> None:
    oa_err = orjson.dumps(
        {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}
    )
    an_err = orjson.loads(translate_error(oa_err, 429, "anthropic"))
    assert an_err == {"type": "error", "error": {"type": "rate_limit_error", "message": "Rate limit reached"}}
    an_src = orjson.dumps(
        {"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: bad"}}
    )
    oa_out = orjson.loads(translate_error(an_src, 400, "openai"))
    assert (
        oa_out["error"]["message"] == "max_tokens: bad" and oa_out["error"]["type"] == "invalid_request_error"
    )
    html = orjson.loads(translate_error(b"<html>502 Bad Gateway</html>", 502, "anthropic"))
    assert html["error"]["type"] == "api_error" and "502" in html["error"]["message"]
    assert orjson.loads(translate_error(b"", 529, "anthropic"))["error"]["type"] == "overloaded_error"


@pytest.mark.parametrize("garbage", [[1], {"choices": [3]}, {"content": "text instead of blocks"}])
def test_malformed_upstream_body(garbage: object) -> None:
    from modelpool.protocols.translate_body import MalformedUpstreamBody

    with pytest.raises(MalformedUpstreamBody):
        translate_body(garbage, "openai", "anthropic")  # type: ignore[arg-type]
    with pytest.raises(MalformedUpstreamBody):
        translate_body(garbage, "anthropic", "openai")  # type: ignore[arg-type]
