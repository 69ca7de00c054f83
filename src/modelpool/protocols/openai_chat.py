"""OpenAI Chat Completions: request checks, error shape, and what a stream chunk means (SPEC §1.1, §4).

The relay keeps upstream bytes as they are; this module only *reads* chunks to find the commit point
(the first answer text, refusal or tool call), the final chunk (to carry the `modelpool` metadata)
and usage, and renders gateway errors in OpenAI's shape.
"""

from __future__ import annotations

from typing import Any

import orjson

from modelpool import fastscan
from modelpool.protocols.errors import ClientError, WalkFailed

# The most common non-final chunk carries this literal; when present the chunk is neither the final
# chunk nor the usage chunk, which lets the post-commit relay skip JSON parsing.
NOT_FINAL_MARKERS = (b'"finish_reason":null', b'"finish_reason": null')


def plain_prefix(data: bytes, start: int = 0) -> int:
    """Where the run of whole events from `start` that each carry the compact `"finish_reason":null`
    (the relay's rule for a chunk that is neither final nor usage) and no error ends; `start` if none.
    After the commit point the relay sends such a run as it came, without an event object or any JSON
    per chunk: at model speed that is every read but the last; with an instant reply, all but its tail.
    `data` is whole `\n`-framed events (`sse.Events`); with `\r` framing nothing is a run. One C pass
    (`fastscan`): the regex and `find` calls it replaced were the relay's largest frames in burst."""
    return fastscan.plain_prefix(data, start, NOT_FINAL_MARKERS[0], b'"error"')


def decode_body(body: bytes) -> Any:
    """The request body as JSON; invalid JSON (or UTF-8) is the client's 400, in every dialect."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ClientError(400, f"request body is not valid JSON: {exc}") from None


def parse_request(body: bytes) -> dict[str, Any]:
    """Decode and check the fields the gateway relies on; the upstream checks the rest."""
    req = decode_body(body)
    if not isinstance(req, dict):
        raise ClientError(400, "request body must be a JSON object")
    model = req.get("model")
    if not isinstance(model, str) or not model:
        raise ClientError(400, "'model' is required and must be a non-empty string", param="model")
    messages = req.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ClientError(400, "'messages' is required and must be a non-empty array", param="messages")
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or not isinstance(msg.get("role"), str):
            raise ClientError(400, f"messages[{i}] must be an object with a 'role'", param=f"messages[{i}]")
    stream = req.get("stream", False)
    if not isinstance(stream, bool) and stream is not None:
        raise ClientError(400, "'stream' must be a boolean", param="stream")
    max_tokens = req.get("max_tokens", req.get("max_completion_tokens"))
    if max_tokens is not None and (
        not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1
    ):
        raise ClientError(400, "'max_tokens' must be a positive integer", param="max_tokens")
    return req


def error_body(
    message: str, type: str = "invalid_request_error", code: str | None = None, param: str | None = None
) -> bytes:
    return orjson.dumps({"error": {"message": message, "type": type, "param": param, "code": code}})


def client_error_body(err: ClientError) -> bytes:
    return error_body(err.message, err.type, param=err.param)


def walk_failed_body(err: WalkFailed) -> bytes:
    attempts = [{"route": a.route, "kind": a.kind, "status": a.status} for a in err.attempts]
    payload = {
        "error": {
            "message": err.message,
            "type": err.type,
            "param": None,
            "code": "all_routes_failed" if err.attempts else "no_route",
            "pool": err.pool,
            "attempts": attempts,
        }
    }
    return orjson.dumps(payload)


def stream_error_event(message: str, type: str = "upstream_error", code: str | None = None) -> bytes:
    """The post-commit error event: the openai SDK raises `APIError` on a data object with `error`."""
    return b"data: " + error_body(message, type, code) + b"\n\n"


class ChunkInfo:
    """What one parsed chunk means for the walk. Built only for chunks we could not skip."""

    __slots__ = ("content", "error", "final", "meaningful", "obj", "usage")

    def __init__(self, obj: Any) -> None:
        self.obj = obj
        self.content = False  # answer text, refusal or a tool call: passing it commits the walk
        self.meaningful = False  # content or reasoning: worth sending headers for
        self.final = False  # carries finish_reason, or is the trailing usage chunk
        self.error: Any = None
        self.usage: Any = None
        if not isinstance(obj, dict):
            self.error = {"message": "malformed chunk: not a JSON object"}
            return
        if obj.get("error"):
            self.error = obj["error"]
            return
        self.usage = obj.get("usage")
        choices = obj.get("choices")
        if not choices:
            self.final = self.usage is not None
            return
        for choice in choices:
            if not isinstance(choice, dict):
                continue
            if choice.get("finish_reason"):
                self.final = True
            delta = choice.get("delta") or choice.get("message")
            if isinstance(delta, dict):
                self._read_delta(delta)

    def _read_delta(self, delta: dict[str, Any]) -> None:
        if (
            delta.get("content")
            or delta.get("refusal")
            or delta.get("tool_calls")
            or delta.get("function_call")
        ):
            self.content = True
            self.meaningful = True
        elif delta.get("reasoning_content") or delta.get("reasoning"):
            self.meaningful = True


def inspect(data: bytes) -> ChunkInfo:
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        info = ChunkInfo(None)
        info.error = {"message": "malformed chunk from upstream (not JSON)"}
        return info
    return ChunkInfo(obj)


def with_metadata(obj: dict[str, Any], meta: dict[str, Any]) -> bytes:
    """Re-encode the final chunk with the `modelpool` field (SPEC §1.1); every other chunk stays as sent."""
    obj["modelpool"] = meta
    return b"data: " + orjson.dumps(obj) + b"\n\n"


def response_has_choices(body: bytes) -> tuple[bool, Any]:
    """A non-stream 200 is only a success when it is a completion object (some upstreams 200 an error)."""
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False, None
    if isinstance(obj, dict) and isinstance(obj.get("choices"), list) and not obj.get("error"):
        return True, obj
    return False, obj


def content_chunk(like: Any, text: str) -> bytes:
    """A synthetic content chunk shaped like `like` (same id/model), e.g. for the inline switch notice."""
    base = like if isinstance(like, dict) else {}
    chunk = {
        "id": base.get("id", "chatcmpl-modelpool"),
        "object": "chat.completion.chunk",
        "created": base.get("created", 0),
        "model": base.get("model", ""),
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}],
    }
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


def prepend_content(obj: dict[str, Any], text: str) -> bytes:
    for choice in obj.get("choices") or []:
        message = choice.get("message") if isinstance(choice, dict) else None
        if isinstance(message, dict):
            message["content"] = text + (message.get("content") or "")
    return orjson.dumps(obj)


IMAGE_PARTS = ("image_url", "input_image", "image")


def has_images(req: dict[str, Any]) -> bool:
    """An image anywhere in the conversation, in any dialect (chat `messages`, Responses `input`)."""
    items = req.get("messages") or req.get("input")
    if not isinstance(items, list):
        return False
    for msg in items:
        if not isinstance(msg, dict):
            continue
        if msg.get("type") in IMAGE_PARTS:
            return True
        content = msg.get("content")
        if isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and part.get("type") in IMAGE_PARTS:
                    return True
    return False


def has_tools(req: dict[str, Any]) -> bool:
    return bool(req.get("tools")) or bool(req.get("functions"))
