"""Client keys (SPEC §12, §14): who is calling, under which name, with which limits.

A key is never logged, shown or stored: it stands as its `name`, or as a short hash (`key-1a2b3c4d`) when
it has none. A plain string in `server.api_keys` is a key with no limits; an object carries a budget,
`rpm`, `tpm` and a pool allowlist. One `KeyRing` per runtime (rebuilt with the configuration).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import dataclass

from modelpool.catalog.filters import glob_match
from modelpool.config.prices import ApiKey, Budget, ClientKeyConfig


def short_hash(secret: str) -> str:
    return "key-" + hashlib.sha256(secret.encode()).hexdigest()[:8]


@dataclass(frozen=True, slots=True)
class ClientKey:
    secret: bytes  # compared in constant time; never leaves this object
    label: str  # the name, or the short hash
    budget: Budget | None = None
    rpm: int | None = None
    tpm: int | None = None
    pools: tuple[str, ...] | None = None

    @property
    def limited(self) -> bool:
        """True when admission has anything to check (the plain key costs nothing per call)."""
        return (
            self.budget is not None or self.rpm is not None or self.tpm is not None or self.pools is not None
        )

    def may_use(self, pool_id: str) -> bool:
        return self.pools is None or any(glob_match(p, pool_id) for p in self.pools)

    def describe(self) -> dict[str, object]:
        return {
            "name": self.label,
            "budget": self.budget.model_dump() if self.budget is not None else None,
            "rpm": self.rpm,
            "tpm": self.tpm,
            "pools": list(self.pools) if self.pools is not None else None,
        }


class KeyRing:
    def __init__(self, entries: Sequence[ApiKey]) -> None:
        self.keys = tuple(_key(e) for e in entries)

    @property
    def required(self) -> bool:
        return bool(self.keys)

    def match(self, presented: str) -> ClientKey | None:
        """The key presented, compared with every configured key in constant time."""
        raw = presented.encode()
        found: ClientKey | None = None
        for key in self.keys:
            if hmac.compare_digest(raw, key.secret) and found is None:
                found = key
        return found


def _key(entry: ApiKey) -> ClientKey:
    if isinstance(entry, str):
        return ClientKey(entry.encode(), short_hash(entry))
    assert isinstance(entry, ClientKeyConfig)
    return ClientKey(
        entry.key.encode(),
        entry.name or short_hash(entry.key),
        entry.budget,
        entry.rpm,
        entry.tpm,
        tuple(entry.pools) if entry.pools is not None else None,
    )


def presented_key(headers: dict[str, str]) -> str:
    return headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ").strip()
