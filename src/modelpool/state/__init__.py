"""Shared state behind one interface (SPEC §9): memory, sqlite (default), redis (several processes)."""

from __future__ import annotations

from pathlib import Path

from modelpool.config.schema import StateConfig
from modelpool.state.base import NAMESPACES, StateBackend
from modelpool.state.memory import MemoryBackend
from modelpool.state.sqlite import SqliteBackend

__all__ = ["NAMESPACES", "MemoryBackend", "SqliteBackend", "StateBackend", "create_backend"]


def create_backend(state_config: StateConfig, state_dir: Path) -> StateBackend:
    """The backend `state.backend` names. A relative sqlite path is taken relative to `state_dir`."""
    if state_config.backend == "memory":
        return MemoryBackend()
    if state_config.backend == "redis":
        from modelpool.state.redis_backend import RedisBackend

        return RedisBackend(
            state_config.redis_url, prefix=state_config.redis_prefix, persist_ttl=state_config.persist_ttl
        )
    path = Path(state_config.path).expanduser()
    if not path.is_absolute():
        path = Path(state_dir).expanduser() / path
    return SqliteBackend(path)
