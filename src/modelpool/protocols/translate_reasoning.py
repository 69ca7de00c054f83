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
