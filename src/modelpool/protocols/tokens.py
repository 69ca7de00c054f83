"""Prompt size estimates without a tokenizer (context-window demotion, `/v1/messages/count_tokens`).

Method: every string the model reads counts len/4 tokens (the usual ~4 characters per token of English
and code; CJK text is undercounted, which errs toward keeping a route, not demoting it); each message
adds 4 tokens of role/framing overhead; each image counts a fixed 1000 (a typical 1–2 megapixel image
costs Anthropic ~1600 and OpenAI ~765 at high detail); a document/file counts its decoded size / 4 with a
floor of 1000. Binary payloads (base64 data, signatures, encrypted reasoning) are never read as text.
Tool definitions count the length of their JSON. The result is an estimate; precision is not the goal,
never being off by an order of magnitude is.
"""

from __future__ import annotations

from typing import Any

import orjson

MESSAGE_OVERHEAD = 4
IMAGE_TOKENS = 1000
_IMAGE_TYPES = frozenset({"image", "image_url", "input_image"})
_FILE_TYPES = frozenset({"document", "file", "input_file"})
# Opaque to the model's tokenizer (or billed differently): skipped.
_SKIP_KEYS = frozenset(
    {"signature", "encrypted_content", "data", "file_data", "id", "tool_use_id", "call_id"}
)
_SKIP_KEYS |= {"tool_call_id", "type", "role", "cache_control", "media_type", "detail", "index", "status"}


def estimate_tokens(body: dict[str, Any], dialect: str = "openai") -> int:
    """`dialect` is the shape of `body`: "openai" (chat), "anthropic" (messages) or "responses"."""
    chars = 0
    overhead = 0
    if dialect == "anthropic":
        chars += _chars(body.get("system"))
        messages = body.get("messages")
    elif dialect == "gemini":
        return _gemini_tokens(body)
    elif dialect == "responses":
        chars += _chars(body.get("instructions"))
        messages = body.get("input")
        if isinstance(messages, str):
            chars += len(messages)
            overhead += MESSAGE_OVERHEAD
            messages = None
    else:
        messages = body.get("messages")
    images = 0
    if isinstance(messages, list):
        for m in messages:
            overhead += MESSAGE_OVERHEAD
            c, i = _walk(m)
            chars += c
            images += i
    tools = body.get("tools")
    if isinstance(tools, list) and tools:
        chars += len(orjson.dumps(tools))
    return chars // 4 + overhead + images


def text_tokens(value: Any) -> int:
    """The text under a decoded reply (a completion, message or response object): len/4, ids, types and
    opaque payloads skipped — the output estimate of a call whose upstream reported no usage."""
    return (_walk(value)[0] + 3) // 4


def _chars(value: Any) -> int:
    return _walk(value)[0]


def _walk(value: Any) -> tuple[int, int]:
    """(characters of text, tokens of images/files) under `value`."""
    if isinstance(value, str):
        return len(value), 0
    if isinstance(value, list):
        chars = extra = 0
        for v in value:
            c, e = _walk(v)
            chars += c
            extra += e
        return chars, extra
    if not isinstance(value, dict):
        return 0, 0
    kind = value.get("type")
    if not isinstance(kind, str):  # client input: `type` may be any JSON value (unhashable list/dict)
        kind = None
    if kind in _IMAGE_TYPES:
        return 0, IMAGE_TOKENS
    if kind in _FILE_TYPES:
        return 0, max(IMAGE_TOKENS, _payload_len(value) * 3 // 16)
    chars = extra = 0
    for key, v in value.items():
        if key in _SKIP_KEYS:
            continue
        if key == "input" and isinstance(v, dict):  # tool_use input: the model wrote it as JSON
            chars += len(orjson.dumps(v))
            continue
        c, e = _walk(v)
        chars += c
        extra += e
    return chars, extra


def _payload_len(part: dict[str, Any]) -> int:
    """Length of the base64 payload of a file part, whatever the dialect nests it under."""
    for holder in (part, part.get("source"), part.get("file")):
        if isinstance(holder, dict):
            for key in ("data", "file_data"):
                if isinstance(holder.get(key), str):
                    return len(holder[key])
    return 0


_GEMINI_SKIP = frozenset({"thoughtSignature", "thought_signature", "data", "id", "role", "mimeType"})


def _gemini_tokens(body: dict[str, Any]) -> int:
    """Gemini `contents`/`parts`: text, function calls/responses as JSON, inline images at the fixed cost."""
    chars = images = overhead = 0
    system = body.get("systemInstruction", body.get("system_instruction"))
    contents = body.get("contents")
    contents = contents if isinstance(contents, list) else []
    for content in [system, *contents] if system else contents:  # no system prompt: no framing for one
        if isinstance(content, str):
            chars += len(content)
            continue
        parts = content.get("parts") if isinstance(content, dict) else None
        overhead += MESSAGE_OVERHEAD
        for part in parts if isinstance(parts, list) else []:
            if not isinstance(part, dict):
                continue
            if isinstance(part.get("text"), str):
                chars += len(part["text"])
            elif part.get("inlineData") or part.get("inline_data") or part.get("fileData"):
                images += IMAGE_TOKENS
            else:
                chars += len(orjson.dumps({k: v for k, v in part.items() if k not in _GEMINI_SKIP}))
    tools = body.get("tools")
    if isinstance(tools, list) and tools:
        chars += len(orjson.dumps(tools))
    return chars // 4 + overhead + images
