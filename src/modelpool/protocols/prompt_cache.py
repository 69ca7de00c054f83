"""Prompt-cache breakpoints for a call translated onto a Messages route (SPEC §3.11).

Anthropic caches only what a request marks with `cache_control`. An Anthropic client marks its own; an
OpenAI, Responses or Gemini client cannot, so on a Messages route each of its turns would pay the whole
prompt again. modelpool places the breakpoints an Anthropic client would — the end of `tools`, the end of
the system prompt and the last user turn (three of Anthropic's four) — unless the body already has one
anywhere (then the client, or an earlier translation, decided). Only the parts it marks are copied.
"""

from __future__ import annotations

from typing import Any

EPHEMERAL = {"type": "ephemeral"}


def has_breakpoint(body: dict[str, Any]) -> bool:
    for tool in body.get("tools") or ():
        if isinstance(tool, dict) and "cache_control" in tool:
            return True
    system = body.get("system")
    if isinstance(system, list) and any(isinstance(b, dict) and "cache_control" in b for b in system):
        return True
    for msg in body.get("messages") or ():
        content = msg.get("content") if isinstance(msg, dict) else None
        if isinstance(content, list) and any(isinstance(b, dict) and "cache_control" in b for b in content):
            return True
    return False


def place_breakpoints(body: dict[str, Any]) -> dict[str, Any]:
    """`body` (a translated Messages request, owned by the caller) with the breakpoints added."""
    if has_breakpoint(body):
        return body
    tools = body.get("tools")
    if isinstance(tools, list) and tools and isinstance(tools[-1], dict):
        body["tools"] = [*tools[:-1], {**tools[-1], "cache_control": EPHEMERAL}]
    system = body.get("system")
    if isinstance(system, str) and system:
        body["system"] = [{"type": "text", "text": system, "cache_control": EPHEMERAL}]
    elif isinstance(system, list) and system and isinstance(system[-1], dict):
        body["system"] = [*system[:-1], {**system[-1], "cache_control": EPHEMERAL}]
    messages = body.get("messages")
    if isinstance(messages, list):
        for i in range(len(messages) - 1, -1, -1):
            msg = messages[i]
            if isinstance(msg, dict) and msg.get("role") == "user":
                marked = _marked_turn(msg)
                if marked is not None:
                    body["messages"] = [*messages[:i], marked, *messages[i + 1 :]]
                break
    return body


def _marked_turn(msg: dict[str, Any]) -> dict[str, Any] | None:
    content = msg.get("content")
    if isinstance(content, str):
        return (
            {**msg, "content": [{"type": "text", "text": content, "cache_control": EPHEMERAL}]}
            if content
            else None
        )
    if isinstance(content, list) and content and isinstance(content[-1], dict):
        last = content[-1]
        if last.get("type") in ("thinking", "redacted_thinking"):  # these cannot carry cache_control
            return None
        return {**msg, "content": [*content[:-1], {**last, "cache_control": EPHEMERAL}]}
    return None
