"""The state backend interface (SPEC §9).

A namespaced key/value store whose values are JSON-able. The hot path never waits on it: `put` and
`delete` only enqueue, and the backend writes in the background. Reads (`load`) happen at start-up and
on resync, never per request.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Final

import orjson

# The namespaces the gateway uses; backends accept any string, these are listed for discoverability.
HEALTH: Final = "health"
PINS: Final = "pins"
DASHBOARD: Final = "dashboard"
ROSTER: Final = "roster"
COUNTERS: Final = "counters"
META: Final = "meta"
NAMESPACES: Final = (HEALTH, PINS, DASHBOARD, ROSTER, COUNTERS, META)


class StateBackend(ABC):
    """One interface, several backends (`memory`, `sqlite`, later `redis`)."""

    name: str = "abstract"
    shared: bool = False  # True when other processes share this state (redis): see `set_listener`
    # False when nothing written can ever be read back (memory: loaded once at start, empty): the gateway
    # then skips encoding a health record and a pin on every call.
    durable: bool = True

    async def start(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Open connections and start background work. Idempotent."""

    @abstractmethod
    async def close(self) -> None:
        """Flush pending writes and release resources. Idempotent."""

    @abstractmethod
    async def load(self, namespace: str) -> dict[str, Any]:
        """Every key of `namespace` with its value, including writes not yet flushed."""

    @abstractmethod
    def put(self, namespace: str, key: str, value: Any) -> None:
        """Enqueue a write; returns at once. Raises TypeError if `value` is not JSON-able."""

    @abstractmethod
    def delete(self, namespace: str, key: str) -> None:
        """Enqueue a delete; returns at once."""

    def set_listener(self, listener: Callable[[str, str, Any], None]) -> None:  # noqa: B027
        """Register `listener(namespace, key, value)` for changes made by *other* processes (a deleted
        key arrives as None; a counter as its shared value). Backends that are not shared never call it."""

    def share(self, namespace: str, key: str, value: Any, ttl: float) -> None:  # noqa: B027
        """An ephemeral item for the other replicas (the fleet view: sessions, events, watchers), kept
        `ttl` seconds; returns at once. Not persisted, not restored: the owner re-shares its own items
        whenever the shared store (re)connects (`on_connect`). Backends that are not shared drop it."""

    on_connect: Callable[[], None] | None = None  # called when a shared store (re)connects

    def bump(self, namespace: str, key: str, local_value: int) -> None:  # noqa: B027
        """One step of a shared monotonic counter (a round-robin cursor) this process took; returns at
        once. Backends that are not shared keep counters in the process only."""

    @abstractmethod
    async def flush(self) -> None:
        """Write every pending change now."""

    @property
    @abstractmethod
    def healthy(self) -> bool:
        """False while the store cannot be written (the gateway keeps serving on local state)."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Status for `/readyz`, `status` and the dashboard: name, location, health, pending writes.

        Never includes secrets (passwords in URLs are redacted by the backend that has them).
        """

    async def __aenter__(self) -> StateBackend:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def encode(value: Any) -> str:
    """JSON text of a value; raises TypeError for anything JSON cannot carry, at the caller's line."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError as exc:
        raise TypeError(f"state values must be JSON-able: {exc}") from exc


def decode(text: str | bytes) -> Any:
    return orjson.loads(text)
