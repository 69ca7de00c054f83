"""OpenAI Responses (`/v1/responses`): request checks, error shape, the response object (SPEC §1.1).

Shapes follow the `openai` SDK's `types/responses` models (what its stream accumulator parses): every
stream event carries `type` and `sequence_number` and goes out as `event: <type>\\ndata: <json>`.
Errors use the OpenAI error shape. `previous_response_id` is served by the route that produced that
response (`routing.response_book`); `conversation` (server-side conversation objects) is refused with a
400 rather than silently answered without context.
"""

from __future__ import annotations

from typing import Any

import orjson

from modelpool.protocols import openai_chat
from modelpool.protocols.effort import normalize
from modelpool.protocols.errors import ClientError, WalkFailed

# Request fields echoed on the response object, as OpenAI does.
_ECHO = (
    "instructions",
    "max_output_tokens",
    "metadata",
    "reasoning",
    "temperature",
    "text",
    "top_p",
    "truncation",
    "user",
    "prompt_cache_key",
    "safety_identifier",
)


def parse_request(body: bytes) -> dict[str, Any]:
    req = openai_chat.decode_body(body)
    check_request(req)
    return req  # type: ignore[no-any-return]


def check_request(req: Any) -> None:
    if not isinstance(req, dict):
        raise ClientError(400, "request body must be a JSON object")
    model = req.get("model")
    if not isinstance(model, str) or not model:
        raise ClientError(400, "'model' is required and must be a non-empty string", param="model")
    if req.get("conversation"):
        raise ClientError(
            400,
            "'conversation' is not supported: modelpool keeps no conversation objects; send the whole input",
            param="conversation",
        )
    prev = req.get("previous_response_id")
    if prev is not None and not isinstance(prev, str):
        raise ClientError(400, "'previous_response_id' must be a string", param="previous_response_id")
    inp = req.get("input")
    if isinstance(inp, list):
        if not inp:
            raise ClientError(400, "'input' must not be an empty array", param="input")
        for i, item in enumerate(inp):
            if not isinstance(item, dict) or not (isinstance(item.get("type"), str) or "role" in item):
                raise ClientError(
                    400, f"input[{i}] must be an object with a 'type' or 'role'", param=f"input[{i}]"
                )
    elif not isinstance(inp, str):
        raise ClientError(400, "'input' is required: a string or an array of input items", param="input")
    instructions = req.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise ClientError(400, "'instructions' must be a string", param="instructions")
    tools = req.get("tools")
    if tools is not None and (
        not isinstance(tools, list)
        or not all(isinstance(t, dict) and isinstance(t.get("type"), str) for t in tools)
    ):
        raise ClientError(400, "'tools' must be an array of objects with a 'type'", param="tools")
    reasoning = req.get("reasoning")
    if reasoning is not None:
        effort = reasoning.get("effort") if isinstance(reasoning, dict) else 0
        if not isinstance(reasoning, dict) or (effort is not None and normalize(effort) is None):
            raise ClientError(
                400, f"'reasoning.effort' is not a known effort: {effort!r}", param="reasoning.effort"
            )
    stream = req.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise ClientError(400, "'stream' must be a boolean", param="stream")
    mot = req.get("max_output_tokens")
    if mot is not None and (not isinstance(mot, int) or isinstance(mot, bool) or mot < 1):
        raise ClientError(400, "'max_output_tokens' must be a positive integer", param="max_output_tokens")


# Errors: the OpenAI shape, shared with chat completions.
error_body = openai_chat.error_body
client_error_body = openai_chat.client_error_body


def walk_failed_body(err: WalkFailed) -> bytes:
    return openai_chat.walk_failed_body(err)


def frame(kind: bytes, obj: dict[str, Any]) -> bytes:
    return b"event: " + kind + b"\ndata: " + orjson.dumps(obj) + b"\n\n"


def response_object(
    *,
    resp_id: str,
    created_at: int,
    model: str,
    output: list[dict[str, Any]],
    status: str,
    usage: dict[str, Any] | None = None,
    request: dict[str, Any] | None = None,
    error: dict[str, Any] | None = None,
    incomplete_reason: str | None = None,
) -> dict[str, Any]:
    """The `response` object of `response.created/.completed/.failed` and of a non-stream reply."""
    req = request or {}
    obj: dict[str, Any] = {
        "id": resp_id,
        "object": "response",
        "created_at": created_at,
        "status": status,
        "model": model,
        "output": output,
        "parallel_tool_calls": req.get("parallel_tool_calls", True),
        "tool_choice": req.get("tool_choice", "auto"),
        "tools": req.get("tools") or [],
        "error": error,
        "incomplete_details": {"reason": incomplete_reason} if incomplete_reason else None,
        "usage": usage,
    }
    for key in _ECHO:
        if key in req:
            obj[key] = req[key]
    return obj


def output_text_of(output: list[dict[str, Any]]) -> str:
    """The SDK's `output_text`: every output_text part of every message item, in order."""
    parts: list[str] = []
    for item in output:
        if item.get("type") == "message":
            parts.extend(p.get("text", "") for p in item.get("content", []) if p.get("type") == "output_text")
    return "".join(parts)


# Finish/stop reasons that make a Responses reply "incomplete", with the reason Responses gives.
INCOMPLETE_BY_FINISH = {"length": "max_output_tokens", "content_filter": "content_filter"}


def error_code_for_status(status: int) -> str:
    """Responses `error.code` for a failed response (its vocabulary is narrow)."""
    return "rate_limit_exceeded" if status == 429 else "server_error"
