"""Anthropic Messages: request checks, error shape, and what a stream event means (SPEC §1.1, §4).

The same-dialect relay (Anthropic client, Anthropic route) keeps upstream bytes as they are and reads
events with `inspect` to find the commit point, the final events and usage — the Anthropic twin of
`openai_chat.ChunkInfo`. Wire formats: streaming.md §4.2.
"""

from __future__ import annotations

from typing import Any

import orjson

from modelpool.protocols import openai_chat
from modelpool.protocols.errors import ClientError, WalkFailed
from modelpool.protocols.mapping import usage_from_anthropic
from modelpool.protocols.sse import SSEEvent
from modelpool.protocols.tokens import estimate_tokens

ERROR_TYPE_BY_STATUS = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    502: "api_error",
    503: "overloaded_error",
    504: "timeout_error",
    529: "overloaded_error",
}
STATUS_BY_ERROR_TYPE = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "timeout_error": 504,
    "api_error": 500,
    "overloaded_error": 529,
}
# Gateway failure kinds (health.classify.FailureKind values) as the Anthropic client should see them.
ERROR_TYPE_BY_KIND = {
    "quota": "billing_error",
    "auth": "authentication_error",
    "unsupported": "invalid_request_error",
    "rate-limit": "rate_limit_error",
    "server": "api_error",
    "network": "api_error",
    "request": "invalid_request_error",
    "cancelled": "api_error",
}
_ROLES = frozenset({"user", "assistant"})


def error_type_for_status(status: int) -> str:
    if status in ERROR_TYPE_BY_STATUS:
        return ERROR_TYPE_BY_STATUS[status]
    return "invalid_request_error" if 400 <= status < 500 else "api_error"


def error_type_for(type: str | None, status: int) -> str:
    """An error type valid in Anthropic's vocabulary: kept when it already is one, else by status."""
    if type in STATUS_BY_ERROR_TYPE:
        return type
    if type in ERROR_TYPE_BY_KIND:
        return ERROR_TYPE_BY_KIND[type]
    return error_type_for_status(status)


def parse_request(body: bytes) -> dict[str, Any]:
    req = openai_chat.decode_body(body)
    check_request(req)
    return req  # type: ignore[no-any-return]


def check_request(req: Any) -> None:
    """The fields the gateway relies on, with messages worded like Anthropic's own (`field: problem`)."""
    if not isinstance(req, dict):
        raise ClientError(400, "request body must be a JSON object")
    model = req.get("model")
    if not isinstance(model, str) or not model:
        raise ClientError(400, "model: Field required", param="model")
    max_tokens = req.get("max_tokens")
    if max_tokens is None:
        raise ClientError(400, "max_tokens: Field required", param="max_tokens")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise ClientError(400, "max_tokens: Input should be an integer ≥ 1", param="max_tokens")
    messages = req.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ClientError(400, "messages: at least one message is required", param="messages")
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or not isinstance(msg.get("role"), str) or msg["role"] not in _ROLES:
            raise ClientError(
                400, f"messages.{i}.role: Input should be 'user' or 'assistant'", param=f"messages.{i}.role"
            )
        content = msg.get("content")
        if isinstance(content, list):
            for j, block in enumerate(content):
                if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                    raise ClientError(
                        400,
                        f"messages.{i}.content.{j}: each content block must be an object with a 'type'",
                        param=f"messages.{i}.content.{j}",
                    )
        elif not isinstance(content, str):
            raise ClientError(
                400, f"messages.{i}.content: Input should be a string or a list of content blocks"
            )
    system = req.get("system")
    if system is not None and not isinstance(system, str | list):
        raise ClientError(400, "system: Input should be a string or a list of text blocks", param="system")
    stream = req.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise ClientError(400, "stream: Input should be a valid boolean", param="stream")


def error_body(message: str, type: str = "invalid_request_error", **extra: Any) -> bytes:
    return orjson.dumps({"type": "error", "error": {"type": type, "message": message, **extra}})


def client_error_body(err: ClientError) -> bytes:
    return error_body(err.message, error_type_for(err.type, err.status))


def walk_failed_body(err: WalkFailed) -> bytes:
    attempts = [{"route": a.route, "kind": a.kind, "status": a.status} for a in err.attempts]
    return error_body(err.message, error_type_for(err.type, err.status), pool=err.pool, attempts=attempts)


def stream_error_event(message: str, type: str = "api_error") -> bytes:
    """Post-commit error: the anthropic SDK raises on `event: error`; no message_stop follows."""
    return b"event: error\ndata: " + error_body(message, type) + b"\n\n"


def with_metadata(obj: dict[str, Any], meta: dict[str, Any]) -> bytes:
    """Re-encode a `message_delta` with the `modelpool` field (SPEC §1.1)."""
    obj["modelpool"] = meta
    return b"event: message_delta\ndata: " + orjson.dumps(obj) + b"\n\n"


class AnthropicEventInfo:
    """What one upstream Anthropic event means for the walk.

    content: passing it commits the walk — a text_delta with text, a tool_use block start, or a
    non-empty input_json_delta. meaningful: content or reasoning (thinking/redacted_thinking).
    final: message_delta or message_stop; done: message_stop (the success terminator)."""

    __slots__ = ("content", "done", "error", "event_name", "final", "meaningful", "obj", "usage")

    def __init__(self, event_name: str | None, obj: Any) -> None:
        self.obj = obj
        self.content = self.meaningful = self.final = self.done = False
        self.error: Any = None
        self.usage: Any = None
        if not isinstance(obj, dict):
            self.event_name = event_name
            self.error = {"type": "api_error", "message": "malformed event: not a JSON object"}
            return
        kind = obj.get("type") or event_name
        self.event_name = kind
        if kind == "content_block_delta":
            delta = obj.get("delta") or {}
            dt = delta.get("type")
            if (dt == "text_delta" and delta.get("text")) or (
                dt == "input_json_delta" and delta.get("partial_json")
            ):
                self.content = self.meaningful = True
            elif dt == "thinking_delta" and delta.get("thinking"):
                self.meaningful = True
        elif kind == "content_block_start":
            block = obj.get("content_block") or {}
            bt = block.get("type")
            if bt in ("tool_use", "server_tool_use") or (bt == "text" and block.get("text")):
                self.content = self.meaningful = True
            elif bt == "redacted_thinking" or (bt == "thinking" and block.get("thinking")):
                self.meaningful = True
        elif kind == "message_delta":
            self.final = True
            self.usage = obj.get("usage")
        elif kind == "message_stop":
            self.final = self.done = True
        elif kind == "message_start":
            message = obj.get("message")
            self.usage = message.get("usage") if isinstance(message, dict) else None
        elif kind == "error":
            self.error = obj.get("error") or {"type": "api_error", "message": "upstream error event"}


def inspect(ev: SSEEvent) -> AnthropicEventInfo:
    try:
        obj = orjson.loads(ev.data)
    except orjson.JSONDecodeError:
        info = AnthropicEventInfo(ev.event, None)
        info.error = {"type": "api_error", "message": "malformed event from upstream (not JSON)"}
        return info
    return AnthropicEventInfo(ev.event, obj)


def normalized_usage(start: Any, delta: Any) -> dict[str, int] | None:
    """Usage of a relayed stream: message_start's usage updated by the last message_delta's."""
    return usage_from_anthropic(delta, usage_from_anthropic(start))


def count_tokens_estimate(body: dict[str, Any]) -> int:
    """`/v1/messages/count_tokens`: `{"input_tokens": N}` from the estimate in `tokens.py`
    (characters/4 over system, messages and tools, +4 per message, 1000 per image)."""
    return estimate_tokens(body, "anthropic")
