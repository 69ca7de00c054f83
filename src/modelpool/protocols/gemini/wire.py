"""Gemini wire basics: request checks, errors, usage, finish reasons, URLs and the model list.

The body of a Gemini call names no model and no stream flag (both are in the URL); `parse_request` adds
them under `model` and `stream` so the routing core reads a Gemini call like any other. A native attempt
sends the client's bytes (or, when effort must be rewritten, the body without these two keys).
"""

from __future__ import annotations

import functools
from typing import Any

import orjson

from modelpool.protocols.errors import ClientError, WalkFailed
from modelpool.protocols.mapping import _int

# Keys the ingress adds to the parsed body; never sent upstream in a Gemini body.
URL_KEYS = ("model", "stream")

STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    413: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}

# Gemini finishReason ⇄ OpenAI finish_reason (the translators' shared vocabulary).
FINISH_TO_OPENAI = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "MALFORMED_FUNCTION_CALL": "stop",
}
OPENAI_TO_FINISH = {"stop": "STOP", "length": "MAX_TOKENS", "content_filter": "SAFETY", "tool_calls": "STOP"}

GENERATION_METHODS = ["generateContent", "streamGenerateContent", "countTokens"]


def status_name(status: int) -> str:
    return STATUS_NAMES.get(status, "INVALID_ARGUMENT" if 400 <= status < 500 else "INTERNAL")


def error_body(status: int, message: str) -> bytes:
    return orjson.dumps({"error": {"code": status, "message": message, "status": status_name(status)}})


def client_error_body(err: ClientError) -> bytes:
    return error_body(err.status, err.message)


def walk_failed_body(err: WalkFailed) -> bytes:
    return error_body(err.status, err.message)


def stream_error_event(message: str, type: str = "upstream_error", status: int = 502) -> bytes:
    """An in-stream error (Gemini sends the error object as an SSE event); no event follows it."""
    if type == "rate_limit_error":
        status = 429
    body = {"error": {"code": status, "message": message, "status": status_name(status)}}
    return b"data: " + orjson.dumps(body) + b"\n\n"


# ---------------------------------------------------------------- requests


def decode(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ClientError(400, f"Invalid JSON payload received. {exc}") from None


def parse_request(body: bytes, model: str, stream: bool) -> dict[str, Any]:
    req = decode(body)
    check_request(req)
    req["model"] = model
    req["stream"] = stream
    return req  # type: ignore[no-any-return]


def _pick(obj: dict[str, Any], camel: str) -> Any:
    """camelCase as Gemini CLI and raw clients send it, or snake_case (the Python SDK's, accepted too)."""
    if camel in obj:
        return obj[camel]
    return obj.get(_snake(camel))


@functools.cache
def _snake(camel: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in camel)


def check_request(req: Any) -> None:
    if not isinstance(req, dict):
        raise ClientError(400, "Invalid JSON payload received: the request body must be an object.")
    contents = req.get("contents")
    if not isinstance(contents, list) or not contents:
        raise ClientError(
            400, "* GenerateContentRequest.contents: contents is not specified", param="contents"
        )
    for i, content in enumerate(contents):
        if not isinstance(content, dict) or not isinstance(content.get("parts"), list):
            raise ClientError(400, f"* GenerateContentRequest.contents[{i}].parts: must be a list of parts")
        role = content.get("role")
        if role is not None and role not in ("user", "model", "function", "tool"):
            raise ClientError(400, f"* GenerateContentRequest.contents[{i}].role: unknown role {role!r}")
        for j, part in enumerate(content["parts"]):
            if not isinstance(part, dict):
                raise ClientError(
                    400, f"* GenerateContentRequest.contents[{i}].parts[{j}]: must be an object"
                )
    system = _pick(req, "systemInstruction")
    if system is not None and not isinstance(system, dict | str):
        raise ClientError(400, "* GenerateContentRequest.system_instruction: must be a Content")
    tools = req.get("tools")
    if tools is not None and (not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools)):
        raise ClientError(400, "* GenerateContentRequest.tools: must be a list of Tool objects")
    config = _pick(req, "generationConfig")
    if config is not None and not isinstance(config, dict):
        raise ClientError(400, "* GenerateContentRequest.generation_config: must be an object")


def count_request(body: bytes) -> dict[str, Any]:
    """`:countTokens` takes `{contents}` or `{generateContentRequest: {...}}`."""
    req = decode(body)
    if isinstance(req, dict) and isinstance(_pick(req, "generateContentRequest"), dict):
        req = _pick(req, "generateContentRequest")
    check_request(req)
    return req  # type: ignore[no-any-return]


def parts_of(content: Any) -> list[dict[str, Any]]:
    """A Content's parts (a bare string is one text part, as the SDKs allow for systemInstruction)."""
    if isinstance(content, str):
        return [{"text": content}]
    parts = content.get("parts") if isinstance(content, dict) else None
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def has_images(req: dict[str, Any]) -> bool:
    for content in req.get("contents") or []:
        for part in parts_of(content):
            data = _pick(part, "inlineData") or _pick(part, "fileData")
            if isinstance(data, dict) and str(_pick(data, "mimeType") or "").startswith("image/"):
                return True
    return False


def has_tools(req: dict[str, Any]) -> bool:
    return bool(req.get("tools"))


# ---------------------------------------------------------------- usage


def usage_from_gemini(u: Any) -> dict[str, int] | None:
    """usageMetadata → the flat usage of `protocols.mapping` (prompt counts cached input, as Gemini's)."""
    if not isinstance(u, dict):
        return None
    prompt = _int(_pick(u, "promptTokenCount")) + _int(_pick(u, "toolUsePromptTokenCount"))
    thoughts = _int(_pick(u, "thoughtsTokenCount"))
    completion = _int(_pick(u, "candidatesTokenCount")) + thoughts
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "cached_tokens": _int(_pick(u, "cachedContentTokenCount")),
        "cache_creation_tokens": 0,
        "reasoning_tokens": thoughts,
    }


def usage_to_gemini(n: dict[str, int]) -> dict[str, Any]:
    thoughts = n["reasoning_tokens"]
    out: dict[str, Any] = {
        "promptTokenCount": n["prompt_tokens"],
        "candidatesTokenCount": max(0, n["completion_tokens"] - thoughts),
        "totalTokenCount": n["prompt_tokens"] + n["completion_tokens"],
    }
    if thoughts:
        out["thoughtsTokenCount"] = thoughts
    if n["cached_tokens"]:
        out["cachedContentTokenCount"] = n["cached_tokens"]
    return out


# ---------------------------------------------------------------- URLs and the model list


def model_entry(pool_id: str, name: str, context: int | None, efforts: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": f"models/{pool_id}",
        "baseModelId": pool_id,
        "version": "modelpool",
        "displayName": name,
        "description": f"modelpool pool {pool_id}",
        "inputTokenLimit": context or 1_048_576,
        "outputTokenLimit": 65_536,
        "supportedGenerationMethods": GENERATION_METHODS,
    }
    if efforts is None or any(e != "off" for e in efforts):
        entry["thinking"] = True
    return entry
