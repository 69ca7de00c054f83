"""SQLite state backend (SPEC §9): batching off the request path, durability, corrupt-file recovery."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from pathlib import Path

import pytest

from modelpool.state import SqliteBackend


def _rows(path: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT ns, key, value FROM kv ORDER BY ns, key").fetchall()


async def test_puts_are_batched_until_flush(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    backend = SqliteBackend(path, flush_interval=3600)  # the loop never fires in this test
    await backend.start()
    try:
        backend.put("health", "a/x", {"attempts": 1})
        backend.put("health", "a/x", {"attempts": 2})  # last write wins
        backend.put("pins", "s1", ["a/x", 12.5])
        assert backend.describe()["pending_writes"] == 2
        assert _rows(path) == []
        # read-your-writes before the flush
        assert await backend.load("health") == {"a/x": {"attempts": 2}}
        await backend.flush()
        assert backend.describe()["pending_writes"] == 0
        assert _rows(path) == [("health", "a/x", '{"attempts":2}'), ("pins", "s1", '["a/x",12.5]')]
    finally:
        await backend.close()


async def test_background_task_flushes(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    backend = SqliteBackend(path, flush_interval=0.01)
    await backend.start()
    try:
        backend.put("meta", "version", "1")
        for _ in range(500):  # bounded wait on an event, not a timing assertion
            if not backend.describe()["pending_writes"]:
                break
            await asyncio.sleep(0.01)
        assert _rows(path) == [("meta", "version", '"1"')]
    finally:
        await backend.close()


async def test_close_flushes_and_reopen_reads(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "dir" / "state.db"  # parent directories are created
    backend = SqliteBackend(path, flush_interval=3600)
    await backend.start()
    backend.put("health", "a/x", {"n": 1, "text": "余额不足"})
    backend.put("health", "b/y", {"n": 2})
    backend.put("roster", "off", ["c/z"])
    await backend.close()
    await backend.close()  # idempotent

    reopened = SqliteBackend(path)
    await reopened.start()
    try:
        assert await reopened.load("health") == {"a/x": {"n": 1, "text": "余额不足"}, "b/y": {"n": 2}}
        assert await reopened.load("roster") == {"off": ["c/z"]}
        assert await reopened.load("counters") == {}
        reopened.delete("health", "a/x")
        assert await reopened.load("health") == {"b/y": {"n": 2}}
    finally:
        await reopened.close()
    assert [key for ns, key, _ in _rows(path) if ns == "health"] == ["b/y"]


async def test_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    backend = SqliteBackend(path)
    await backend.start()
    await backend.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_put_rejects_values_json_cannot_carry(tmp_path: Path) -> None:
    backend = SqliteBackend(tmp_path / "state.db")
    with pytest.raises(TypeError):
        backend.put("meta", "k", object())
    await backend.close()


async def test_corrupt_file_is_moved_aside(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "state.db"
    path.write_bytes(b"this is not a sqlite database" * 100)
    backend = SqliteBackend(path)
    with caplog.at_level(logging.WARNING, logger="modelpool.state.sqlite"):
        await backend.start()
    try:
        assert backend.healthy
        aside = list(tmp_path.glob("state.db.corrupt-*"))
        assert len(aside) == 1 and aside[0].read_bytes().startswith(b"this is not")
        assert backend.describe()["recovered_from"] == str(aside[0])
        assert any("unreadable" in r.message for r in caplog.records)
        backend.put("meta", "k", 1)
        await backend.flush()
        assert await backend.load("meta") == {"k": 1}
    finally:
        await backend.close()


async def test_unwritable_location_degrades_without_crashing(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where a directory should be")
    backend = SqliteBackend(blocker / "state.db", flush_interval=3600)
    await backend.start()
    try:
        assert not backend.healthy
        backend.put("meta", "k", {"v": 1})
        await backend.flush()  # cannot write: keeps the change pending instead of losing or raising
        info = backend.describe()
        assert info["pending_writes"] == 1 and info["healthy"] is False and "last_error" in info
        assert await backend.load("meta") == {"k": {"v": 1}}
    finally:
        await backend.close()


async def test_unreadable_values_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    backend = SqliteBackend(path)
    await backend.start()
    backend.put("pins", "good", 1)
    await backend.close()
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO kv (ns, key, value, updated) VALUES ('pins', 'bad', '{not json', 0)")
    reopened = SqliteBackend(path)
    try:
        assert await reopened.load("pins") == {"good": 1}
    finally:
        await reopened.close()


async def test_describe_has_no_secrets_and_names_the_backend(tmp_path: Path) -> None:
    backend = SqliteBackend(tmp_path / "state.db")
    info = backend.describe()
    assert info["backend"] == "sqlite" and info["path"].endswith("state.db")
    assert set(info) <= {"backend", "path", "healthy", "pending_writes", "flush_interval", "last_error"}
    await backend.close()
