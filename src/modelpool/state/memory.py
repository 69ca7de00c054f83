"""In-process state: nothing survives a restart (SPEC §9 `memory`)."""

from __future__ import annotations

from typing import Any

from modelpool.state.base import StateBackend, decode, encode


class MemoryBackend(StateBackend):
    name = "memory"
    durable = False

    def __init__(self) -> None:
        # Values are stored as JSON text so a caller mutating its dict later cannot change the stored
        # copy, and so non-JSON-able values fail here exactly as they would on a persistent backend.
        self._data: dict[str, dict[str, str]] = {}

    async def close(self) -> None:
        return None

    async def load(self, namespace: str) -> dict[str, Any]:
        return {key: decode(text) for key, text in self._data.get(namespace, {}).items()}

    def put(self, namespace: str, key: str, value: Any) -> None:
        self._data.setdefault(namespace, {})[key] = encode(value)

    def delete(self, namespace: str, key: str) -> None:
        self._data.get(namespace, {}).pop(key, None)

    async def flush(self) -> None:
        return None

    @property
    def healthy(self) -> bool:
        return True

    def describe(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "healthy": True,
            "pending_writes": 0,
            "keys": sum(len(ns) for ns in self._data.values()),
        }
