"""Anthropic and Responses request checks, error shapes, Anthropic event inspection, token estimates."""

from __future__ import annotations

import orjson
import pytest
from anthropic.types import ErrorResponse
from proto_helpers import events_of, load

from modelpool.protocols import anthropic as an
from modelpool.protocols import responses as rs
from modelpool.protocols.errors import AttemptRecord, ClientError, WalkFailed
from modelpool.protocols.tokens import IMAGE_TOKENS, estimate_tokens


def body(**kw: object) -> bytes:
    base: dict[str, object] = {
        "model": "m",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "hi"}],
    }
    return orjson.dumps(base | kw)


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1]", "JSON object"),
        (
            orjson.dumps({"max_tokens": 1, "messages": [{"role": "user", "content": "x"}]}),
            "model: Field required",
        ),
        (
            orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]}),
            "max_tokens: Field required",
        ),
        (body(max_tokens=0), "max_tokens"),
        (body(max_tokens=True), "max_tokens"),
        (body(messages=[]), "messages"),
        (body(messages=[{"role": "system", "content": "x"}]), "messages.0.role"),
        (body(messages=[{"role": "user", "content": 5}]), "messages.0.content"),
        (body(messages=[{"role": "user", "content": [{"text": "x"}]}]), "messages.0.content.0"),
        (body(system=5), "system"),
        (body(stream="yes"), "stream"),
    ],
)
def test_anthropic_request_checks(raw: bytes, needle: str) -> None:
    with pytest.raises(ClientError) as exc:
        an.parse_request(raw)
    assert exc.value.status == 400 and needle in exc.value.message


def test_anthropic_valid_request() -> None:
    req = an.parse_request(body(system=[{"type": "text", "text": "s"}], stream=True))
    assert req["model"] == "m"


def test_anthropic_error_shapes() -> None:
    assert orjson.loads(an.error_body("nope", "not_found_error")) == {
        "type": "error",
        "error": {"type": "not_found_error", "message": "nope"},
    }
    for status, kind in [
        (400, "invalid_request_error"),
        (401, "authentication_error"),
        (403, "permission_error"),
        (404, "not_found_error"),
        (413, "request_too_large"),
        (429, "rate_limit_error"),
        (500, "api_error"),
        (502, "api_error"),
        (529, "overloaded_error"),
        (418, "invalid_request_error"),
        (503, "overloaded_error"),
    ]:
        assert an.error_type_for_status(status) == kind
    assert an.error_type_for("upstream_error", 502) == "api_error"
    assert an.error_type_for("quota", 429) == "billing_error"
    assert an.error_type_for("overloaded_error", 200) == "overloaded_error"
    err = orjson.loads(an.client_error_body(ClientError(400, "bad", param="x")))
    assert err["error"] == {"type": "invalid_request_error", "message": "bad"}
    walk = WalkFailed(
        "pool-x", [AttemptRecord("a/m", "server", 500), AttemptRecord("b/m", "rate-limit", 429)]
    )
    failed = orjson.loads(an.walk_failed_body(walk))
    assert failed["type"] == "error" and failed["error"]["type"] == "api_error"
    assert failed["error"]["pool"] == "pool-x" and [a["route"] for a in failed["error"]["attempts"]] == [
        "a/m",
        "b/m",
    ]
    event = an.stream_error_event("Overloaded", "overloaded_error")
    assert event.startswith(b"event: error\ndata: ") and event.endswith(b"\n\n")
    ErrorResponse.model_validate(orjson.loads(events_of(event)[0].data))


def test_anthropic_event_info_over_a_recorded_stream() -> None:
    infos = [an.inspect(ev) for ev in events_of(load("anthropic_thinking_tools.sse"))]
    first_content = next(i for i, info in enumerate(infos) if info.content)
    first_meaningful = next(i for i, info in enumerate(infos) if info.meaningful)
    assert infos[first_meaningful].event_name == "content_block_delta"
    assert infos[first_meaningful].obj["delta"]["type"] == "thinking_delta"
    assert infos[first_content].obj["delta"] == {"type": "text_delta", "text": "I'll call"}
    assert not any(i.content for i in infos[:first_content])  # thinking, signature, ping, markup
    assert [i.event_name for i in infos if i.final] == ["message_delta", "message_stop"] and infos[-1].done
    start = infos[0].usage
    usage = an.normalized_usage(start, next(i for i in infos if i.event_name == "message_delta").usage)
    assert usage is not None and usage["prompt_tokens"] == 949 and usage["completion_tokens"] == 47
    tool_start = [i for i in infos if i.event_name == "content_block_start" and i.content]
    assert tool_start and tool_start[0].obj["content_block"]["type"] == "tool_use"
    # An empty input_json_delta is not content.
    empty = [
        i for i in infos if i.event_name == "content_block_delta" and i.obj["delta"].get("partial_json") == ""
    ]
    assert empty and not empty[0].content


def test_anthropic_event_info_errors() -> None:
    infos = [an.inspect(ev) for ev in events_of(load("anthropic_midstream_error.sse"))]
    assert infos[-1].error == {"type": "overloaded_error", "message": "Overloaded"}
    bad = an.inspect(events_of(b"event: content_block_delta\ndata: {oops\n\n")[0])
    assert bad.error is not None


def test_message_delta_with_metadata() -> None:
    obj = {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}}
    out = an.with_metadata(obj, {"route": "r"})
    assert orjson.loads(events_of(out)[0].data)["modelpool"] == {"route": "r"}


def test_count_tokens_estimate() -> None:
    req = {
        "model": "m",
        "max_tokens": 5,
        "system": "x" * 400,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "y" * 800},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": "A" * 10**6},
                    },
                ],
            },
            {
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": "z" * 40, "signature": "S" * 4000}],
            },
        ],
    }
    assert an.count_tokens_estimate(req) == (400 + 800 + 40) // 4 + 2 * 4 + IMAGE_TOKENS
    with_tools = req | {"tools": [{"name": "f", "input_schema": {"type": "object"}}]}
    assert an.count_tokens_estimate(with_tools) > an.count_tokens_estimate(req)


def test_estimate_tokens_dialects() -> None:
    chat = {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "a" * 40},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "Q" * 9999}},
                ],
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "ff", "arguments": "{}" * 10}}
                ],
            },
        ]
    }
    assert estimate_tokens(chat, "openai") == (40 + 2 + 20) // 4 + 8 + IMAGE_TOKENS
    assert estimate_tokens({"instructions": "i" * 8, "input": "h" * 8}, "responses") == 4 + 4
    items = {"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "https://x"}]}]}
    assert estimate_tokens(items, "responses") == 4 + IMAGE_TOKENS


@pytest.mark.parametrize(
    ("req", "needle"),
    [
        ({"input": "x"}, "model"),
        ({"model": "m"}, "input"),
        ({"model": "m", "input": []}, "input"),
        ({"model": "m", "input": [5]}, "input[0]"),
        ({"model": "m", "input": "x", "previous_response_id": 5}, "previous_response_id"),
        ({"model": "m", "input": "x", "conversation": "conv_1"}, "conversation"),
        ({"model": "m", "input": "x", "instructions": ["x"]}, "instructions"),
        ({"model": "m", "input": "x", "tools": [{"name": "f"}]}, "tools"),
        ({"model": "m", "input": "x", "reasoning": {"effort": "galaxy"}}, "reasoning.effort"),
        ({"model": "m", "input": "x", "stream": 1}, "stream"),
        ({"model": "m", "input": "x", "max_output_tokens": 0}, "max_output_tokens"),
    ],
)
def test_responses_request_checks(req: dict, needle: str) -> None:
    with pytest.raises(ClientError) as exc:
        rs.parse_request(orjson.dumps(req))
    assert exc.value.status == 400 and needle in exc.value.message


def test_responses_valid_request_and_error_shape() -> None:
    req = rs.parse_request(
        orjson.dumps(
            {
                "model": "m",
                "input": [{"role": "user", "content": "x"}],
                "reasoning": {"effort": "none"},
                "stream": True,
            }
        )
    )
    assert req["model"] == "m"
    err = orjson.loads(rs.client_error_body(ClientError(400, "bad", param="input")))
    assert err == {
        "error": {"message": "bad", "type": "invalid_request_error", "param": "input", "code": None}
    }
