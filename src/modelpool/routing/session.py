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
    # The agent CLIs' own: Claude Code; Codex (0.171 sends `session-id` and `thread-id`, older releases
    # `session_id` and `conversation_id`). Each is the id the CLI prints for the session.
    "x-claude-code-session-id",
    "session_id",
    "session-id",
    "conversation_id",
    "conversation-id",
)
MAX_ID = 200  # characters of a client's session id kept (it is shown, stored and used as a key)


def session_id(headers: Mapping[str, str], body: dict[str, Any], pool_id: str) -> str:
    """First found: session headers, Anthropic `metadata.user_id`, OpenAI `prompt_cache_key`, `user`;
    else a fingerprint of (pool, system prompt, first user message)."""
    for name in SESSION_HEADERS:
        value = headers.get(name)
        if value:
            return value[:MAX_ID]
    meta = body.get("metadata")
    if isinstance(meta, dict):
        user = meta.get("user_id")
        found = _user_session(user) if isinstance(user, str) and user else None
        if found:
            return found[:MAX_ID]
    for key in ("prompt_cache_key", "user"):
        value = body.get(key)
        if isinstance(value, str) and value:
            return value[:MAX_ID]
    return "fp-" + _fingerprint(pool_id, body)


def _user_session(user_id: str) -> str | None:
    """Anthropic `metadata.user_id`. Claude Code puts a JSON object in it (`{"device_id": …,
    "account_uuid": …, "session_id": …}`): its `session_id` is the session the user sees in the CLI; a
    device id alone stands for the user, not a conversation, so such an object without a session id
    counts as none (the next source decides) rather than being shown as a blob."""
    if not user_id.startswith("{"):
        return user_id
    try:
        parsed = orjson.loads(user_id)
    except orjson.JSONDecodeError:
        return user_id
    if not isinstance(parsed, dict):
        return user_id
    sid = parsed.get("session_id")
    return sid if isinstance(sid, str) and sid else None


def _fingerprint(pool_id: str, body: dict[str, Any]) -> str:
    system = (
        body.get("system")
        or body.get("instructions")
        or body.get("systemInstruction")
        or body.get("system_instruction")  # Gemini from the google-genai Python SDK: snake_case keys
        or ""
    )
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
