"""Session identity (SPEC §8): which conversation a call belongs to."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson

SESSION_HEADERS = (
    "x-session-id",
    "x-modelpool-session",
    "x-deepseek-harness-session-id",
    "x-session-affinity",
)


def session_id(headers: Mapping[str, str], body: dict[str, Any], pool_id: str) -> str:
    """First found: session headers, Anthropic `metadata.user_id`, OpenAI `prompt_cache_key`, `user`;
    else a fingerprint of (pool, system prompt, first user message)."""
    for name in SESSION_HEADERS:
        value = headers.get(name)
        if value:
            return value
    meta = body.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("user_id"), str) and meta["user_id"]:
        return meta["user_id"]
    for key in ("prompt_cache_key", "user"):
        value = body.get(key)
        if isinstance(value, str) and value:
            return value
    return "fp-" + _fingerprint(pool_id, body)


def _fingerprint(pool_id: str, body: dict[str, Any]) -> str:
    system = body.get("system") or body.get("instructions") or body.get("systemInstruction") or ""
    first_user: Any = ""
    messages = body.get("messages") or body.get("input") or body.get("contents") or []
    if isinstance(messages, list):
        for msg in messages:
            if not isinstance(msg, dict):
                continue
            if msg.get("role") in ("system", "developer") and not system:
                system = msg.get("content", "")
            elif msg.get("role") == "user":
                first_user = msg.get("content", msg.get("parts", ""))  # Gemini: a content's parts
                break
    elif isinstance(messages, str):
        first_user = messages
    h = hashlib.blake2b(digest_size=8)
    h.update(pool_id.encode())
    h.update(b"\0" + _canonical(system))
    h.update(b"\0" + _canonical(first_user))
    return h.hexdigest()


def _canonical(value: Any) -> bytes:
    """The bytes hashed for a system prompt or first message. JSON via orjson: on every call, and several
    times faster than `repr` on long prompts (repr scans every character for escapes)."""
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:  # deeper than orjson encodes: still a stable fingerprint
        return repr(value).encode()
