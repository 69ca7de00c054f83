"""Usage and cost kept per (day, pool, route, client key) in the state backend (SPEC §14)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from modelpool.usage.book import UsageBook, utc_day
from modelpool.usage.stores import MemoryUsageStore, RedisUsageStore, SqliteUsageStore, UsageStore

__all__ = ["GROUPS", "UsageBook", "create_usage_store", "utc_day"]

GROUPS = ("pool", "route", "key", "day")


def create_usage_store(state: Any) -> UsageStore:
    """The store that goes with the gateway's state backend."""
    name = getattr(state, "name", "memory")
    if name == "sqlite":
        return SqliteUsageStore(Path(state.path))
    if name == "redis":
        return RedisUsageStore(state.url, state.keys.prefix)
    return MemoryUsageStore()
