"""Shared state behind one interface (SPEC §9): memory, sqlite (default), redis (later)."""

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
        raise NotImplementedError("redis backend lands with the scale-out issue")
    path = Path(state_config.path).expanduser()
    if not path.is_absolute():
        path = Path(state_dir).expanduser() / path
    return SqliteBackend(path)
