"""Session histories in the state backend's sqlite file, on a connection of their own (WAL lets it write
beside the backend's), used from a worker thread."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path
from typing import Any

import orjson

from modelpool.history.stores import Batch, HistoryStore, Limits, by_session, fold, new_summary
from modelpool.state.side_tables import open_side_table

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS session_calls (id INTEGER PRIMARY KEY AUTOINCREMENT, "
    "session TEXT NOT NULL, entry TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS session_calls_by_session ON session_calls (session, id)",
    "CREATE TABLE IF NOT EXISTS sessions (session TEXT PRIMARY KEY, last_at REAL NOT NULL, "
    "summary TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS sessions_by_last ON sessions (last_at)",
)


class SqliteHistoryStore(HistoryStore):
    name = "sqlite"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = open_side_table(self.path, _SCHEMA)
        return self._conn

    async def add(self, batch: Batch, now: float, limits: Limits) -> None:
        await asyncio.to_thread(self._add, by_session(batch), now, limits)

    def _add(self, grouped: dict[str, list[dict[str, Any]]], now: float, limits: Limits) -> None:
        with self._lock:
            conn = self._db()
            conn.execute("BEGIN IMMEDIATE")
            try:
                for sid, entries in grouped.items():
                    self._add_session(conn, sid, entries, limits.calls_kept)
                self._expire(conn, now, limits)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    @staticmethod
    def _add_session(conn: sqlite3.Connection, sid: str, entries: list[dict[str, Any]], keep: int) -> None:
        row = conn.execute("SELECT summary FROM sessions WHERE session = ?", (sid,)).fetchone()
        summary = orjson.loads(row[0]) if row else new_summary(sid, entries[0].get("at") or 0.0)
        for entry in entries:
            fold(summary, entry)
        conn.executemany(
            "INSERT INTO session_calls (session, entry) VALUES (?, ?)",
            [(sid, orjson.dumps(e).decode()) for e in entries],
        )
        conn.execute(
            "INSERT INTO sessions (session, last_at, summary) VALUES (?, ?, ?) ON CONFLICT (session) "
            "DO UPDATE SET last_at = excluded.last_at, summary = excluded.summary",
            (sid, summary["last_at"], orjson.dumps(summary).decode()),
        )
        conn.execute(
            "DELETE FROM session_calls WHERE session = ? AND id <= (SELECT id FROM session_calls "
            "WHERE session = ? ORDER BY id DESC LIMIT 1 OFFSET ?)",
            (sid, sid, keep),
        )

    @staticmethod
    def _expire(conn: sqlite3.Connection, now: float, limits: Limits) -> None:
        gone = [
            r[0]
            for r in conn.execute(
                "SELECT session FROM sessions WHERE last_at < ? UNION SELECT session FROM "
                "(SELECT session FROM sessions ORDER BY last_at DESC LIMIT -1 OFFSET ?)",
                (now - limits.ttl, limits.kept),
            )
        ]
        if gone:
            conn.executemany("DELETE FROM sessions WHERE session = ?", [(s,) for s in gone])
            conn.executemany("DELETE FROM session_calls WHERE session = ?", [(s,) for s in gone])

    async def session(self, sid: str, now: float, limits: Limits) -> dict[str, Any] | None:
        return await asyncio.to_thread(self._session, sid, now - limits.ttl)

    def _session(self, sid: str, horizon: float) -> dict[str, Any] | None:
        with self._lock:
            conn = self._db()
            row = conn.execute(
                "SELECT summary FROM sessions WHERE session = ? AND last_at >= ?", (sid, horizon)
            ).fetchone()
            if row is None:
                return None
            calls = conn.execute(
                "SELECT entry FROM session_calls WHERE session = ? ORDER BY id", (sid,)
            ).fetchall()
        summary = orjson.loads(row[0])
        summary["cost_usd"] = round(summary["cost_usd"], 10)
        return {"summary": summary, "calls": [orjson.loads(c[0]) for c in calls]}

    async def summaries(self, limit: int, now: float, limits: Limits) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self._summaries, limit, now - limits.ttl)

    def _summaries(self, limit: int, horizon: float) -> list[dict[str, Any]]:
        with self._lock:
            rows = (
                self._db()
                .execute(
                    "SELECT summary FROM sessions WHERE last_at >= ? ORDER BY last_at DESC LIMIT ?",
                    (horizon, limit),
                )
                .fetchall()
            )
        out = [orjson.loads(r[0]) for r in rows]
        for s in out:
            s["cost_usd"] = round(s["cost_usd"], 10)
        return out

    async def close(self) -> None:
        def _close() -> None:
            with self._lock:
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None

        await asyncio.to_thread(_close)
