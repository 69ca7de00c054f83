"""Per-session call history (SPEC §8): what each call of a session did, kept in the state backend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from modelpool.history.book import SessionHistory
from modelpool.history.redis_store import RedisHistoryStore
from modelpool.history.sqlite_store import SqliteHistoryStore
from modelpool.history.stores import HistoryStore, Limits, MemoryHistoryStore

__all__ = ["HistoryStore", "Limits", "SessionHistory", "create_history_store"]


def create_history_store(state: Any) -> HistoryStore:
    """The store that goes with the gateway's state backend (shared across replicas with redis)."""
    name = getattr(state, "name", "memory")
    if name == "sqlite":
        return SqliteHistoryStore(Path(state.path))
    if name == "redis":
        return RedisHistoryStore(state.url, state.keys.prefix)
    return MemoryHistoryStore()
