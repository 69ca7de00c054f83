"""Memory backend and the backend factory (SPEC §9)."""

from __future__ import annotations

from pathlib import Path

import pytest

from modelpool.config.schema import StateConfig
from modelpool.state import NAMESPACES, MemoryBackend, SqliteBackend, StateBackend, create_backend


async def test_memory_backend_round_trip() -> None:
    async with MemoryBackend() as backend:
        value = {"a": [1, 2]}
        backend.put("pins", "s1", value)
        value["a"].append(3)  # the stored copy is a snapshot
        backend.put("pins", "s2", None)
        assert await backend.load("pins") == {"s1": {"a": [1, 2]}, "s2": None}
        backend.delete("pins", "s1")
        backend.delete("pins", "missing")
        await backend.flush()
        assert await backend.load("pins") == {"s2": None}
        assert await backend.load("health") == {}
        assert backend.healthy
        assert backend.describe() == {"backend": "memory", "healthy": True, "pending_writes": 0, "keys": 1}


def test_memory_backend_rejects_values_json_cannot_carry() -> None:
    with pytest.raises(TypeError):
        MemoryBackend().put("meta", "k", {1, 2})


def test_namespaces() -> None:
    assert NAMESPACES == ("health", "pins", "dashboard", "roster", "counters", "meta")


def test_create_memory(tmp_path: Path) -> None:
    assert isinstance(create_backend(StateConfig(backend="memory"), tmp_path), MemoryBackend)


def test_create_sqlite_expands_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    backend = create_backend(StateConfig(backend="sqlite", path="~/s/state.db"), tmp_path / "unused")
    assert isinstance(backend, SqliteBackend)
    assert backend.path == tmp_path / "s" / "state.db"


def test_create_sqlite_relative_to_state_dir(tmp_path: Path) -> None:
    backend = create_backend(StateConfig(path="state.db"), tmp_path)
    assert isinstance(backend, StateBackend) and isinstance(backend, SqliteBackend)
    assert backend.path == tmp_path / "state.db"
