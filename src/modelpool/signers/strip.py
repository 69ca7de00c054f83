"""Signed reasoning of other routes, left out of what goes to this one (SPEC §3.10).

Per target dialect, on the body about to go upstream (a copy; the client's own body is never changed):
Anthropic `thinking` / `redacted_thinking` blocks, Responses `reasoning` items, Gemini `thoughtSignature`s
and the `thinking_blocks` side field of Chat messages whose signature another route made. Signed thinking
cannot go unsigned to a Messages route, so it is left out (the turn's answer text stays); a Gemini part keeps
its text and loses only the signature. What was left out is named for `x-modelpool-dropped`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from modelpool.protocols.translate_reasoning import REDACTED_MARK, SIG_MARK
from modelpool.signers.scan import digest

Foreign = Callable[[Any], bool]

# What `x-modelpool-dropped` calls another route's reasoning left out of a Responses body (also the reasoning
# modelpool sealed from a Messages route, which no Responses upstream can read: `drop_sealed_reasoning`).
FOREIGN_REASONING = "reasoning (encrypted by another route)"


def strip_foreign(dialect: str, body: dict[str, Any], foreign: set[str]) -> tuple[dict[str, Any], list[str]]:
    """(body without the signatures in `foreign` (digests), names of what was left out)."""

    def is_foreign(value: Any) -> bool:
        if not isinstance(value, str) or not value:
            return False
        for mark in (SIG_MARK, REDACTED_MARK):
            if value.startswith(mark):
                value = value[len(mark) :]
        return digest(value) in foreign

    strip = _STRIPS.get(dialect)
    if strip is None:
        return body, []
    return strip(body, is_foreign)


def _anthropic(body: dict[str, Any], foreign: Foreign) -> tuple[dict[str, Any], list[str]]:
    messages, dropped = _each_content(body.get("messages"), "content", _anthropic_block, foreign)
    return ({**body, "messages": messages}, dropped) if dropped else (body, [])


def _anthropic_block(block: Any, foreign: Foreign) -> str | None:
    if not isinstance(block, dict):
        return None
    if block.get("type") == "thinking" and foreign(block.get("signature")):
        return "thinking (signed by another route)"
    if block.get("type") == "redacted_thinking" and foreign(block.get("data")):
        return "redacted_thinking (from another route)"
    return None


def _responses(body: dict[str, Any], foreign: Foreign) -> tuple[dict[str, Any], list[str]]:
    items = body.get("input")
    if not isinstance(items, list):
        return body, []
    kept = [
        item
        for item in items
        if not (
            isinstance(item, dict)
            and item.get("type") == "reasoning"
            and foreign(item.get("encrypted_content"))
        )
    ]
    if len(kept) == len(items):
        return body, []
    return {**body, "input": kept}, [FOREIGN_REASONING]


def _chat(body: dict[str, Any], foreign: Foreign) -> tuple[dict[str, Any], list[str]]:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return body, []
    out, dropped = [], []
    for msg in messages:
        blocks = msg.get("thinking_blocks") if isinstance(msg, dict) else None
        if isinstance(blocks, list):
            kept = [b for b in blocks if _anthropic_block(b, foreign) is None]
            if len(kept) != len(blocks):
                msg = {**msg, "thinking_blocks": kept}
                dropped.append("thinking (signed by another route)")
        out.append(msg)
    return ({**body, "messages": out}, sorted(set(dropped))) if dropped else (body, [])


def _gemini(body: dict[str, Any], foreign: Foreign) -> tuple[dict[str, Any], list[str]]:
    def part(p: Any) -> Any:
        if isinstance(p, dict):
            for key in ("thoughtSignature", "thought_signature"):
                if foreign(p.get(key)):
                    return {k: v for k, v in p.items() if k != key}
        return p

    contents = body.get("contents")
    if not isinstance(contents, list):
        return body, []
    changed = False
    out = []
    for content in contents:
        parts = content.get("parts") if isinstance(content, dict) else None
        if isinstance(parts, list):
            new = [part(p) for p in parts]
            if any(a is not b for a, b in zip(new, parts, strict=True)):
                content, changed = {**content, "parts": new}, True
        out.append(content)
    return ({**body, "contents": out}, ["thoughtSignature (from another route)"]) if changed else (body, [])


def _each_content(
    messages: Any, key: str, judge: Callable[[Any, Foreign], str | None], foreign: Foreign
) -> tuple[Any, list[str]]:
    if not isinstance(messages, list):
        return messages, []
    out, dropped = [], []
    for msg in messages:
        content = msg.get(key) if isinstance(msg, dict) else None
        if isinstance(content, list):
            verdicts = [judge(b, foreign) for b in content]
            if any(verdicts):
                dropped += [v for v in verdicts if v]
                msg = {**msg, key: [b for b, v in zip(content, verdicts, strict=True) if not v]}
        out.append(msg)
    return out, sorted(set(dropped))


_STRIPS = {"anthropic": _anthropic, "responses": _responses, "openai": _chat, "gemini": _gemini}
