"""Which `encrypted_content` is ours: the marker on reasoning modelpool hands a Responses client.

A Responses client (Codex with `store: false`) sends reasoning items back with their opaque
`encrypted_content`. When modelpool itself produced the item from an Anthropic route, that field holds an
Anthropic thinking signature (or a redacted-thinking blob) which must go back to an Anthropic route as
such. When OpenAI produced it, it is OpenAI's encrypted reasoning, which no other provider can read:
carrying it to a chat or Anthropic route is impossible, and losing it changes the answer (`loss.py`).

The two are told apart by a short prefix modelpool writes and strips (docs/decisions.md): `mp1.sig.` for a
signature, `mp1.red.` for redacted thinking. Anything else is another provider's.
"""

from __future__ import annotations

from typing import Any

SIG_MARK = "mp1.sig."
REDACTED_MARK = "mp1.red."


def seal_signature(signature: str) -> str:
    return SIG_MARK + signature


def seal_redacted(data: str) -> str:
    return REDACTED_MARK + data


def open_sealed(value: object) -> tuple[str, str] | None:
    """("signature" | "redacted", payload) for modelpool's own marked value, else None (foreign or empty)."""
    if not isinstance(value, str):
        return None
    if value.startswith(SIG_MARK):
        return "signature", value[len(SIG_MARK) :]
    if value.startswith(REDACTED_MARK):
        return "redacted", value[len(REDACTED_MARK) :]
    return None


def drop_sealed_reasoning(body: dict[str, Any]) -> dict[str, Any]:
    """For a native Responses attempt (OpenAI, an aggregator): the reasoning items modelpool wrote from an
    Anthropic route carry a marked signature that the Responses upstream cannot decrypt (it would answer
    400), so they are left out; the answer text of those turns stays. Returns `body` itself when it holds
    none (the common case costs one scan of the input list)."""
    items = body.get("input")
    if not isinstance(items, list):
        return body
    kept = [
        item
        for item in items
        if not (
            isinstance(item, dict)
            and item.get("type") == "reasoning"
            and open_sealed(item.get("encrypted_content")) is not None
        )
    ]
    return body if len(kept) == len(items) else {**body, "input": kept}
