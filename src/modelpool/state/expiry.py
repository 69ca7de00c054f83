"""How long a stored value lives, read from the value itself: the Redis backend sets it as the key's TTL, the
sqlite backend as the row's expiry (expired rows are neither loaded nor kept). None: for good."""

from __future__ import annotations

from typing import Any

PIN_TTL_SLACK = 5.0  # seconds a session pin outlives its idleness limit in the store (clock skew margin)
SIGNERS = "signers"  # the signer book (SPEC §3.10): each entry carries its `until`


def value_ttl(ns: str, key: str, value: Any, now: float) -> float | None:
    """Seconds a value lives from `now`, or None for no expiry: a session pin dies with its cache, a signer
    entry with its session (`sessions.ttl`)."""
    if ns == "pins" and key.startswith("session:") and isinstance(value, dict):
        try:
            left = float(value["last_used"]) + float(value["lifetime"]) - now
        except (KeyError, TypeError, ValueError):
            return None
        return max(left, 0.0) + PIN_TTL_SLACK
    if ns == SIGNERS and isinstance(value, dict):
        try:
            return max(float(value["until"]) - now, 0.0)
        except (KeyError, TypeError, ValueError):
            return None
    return None
