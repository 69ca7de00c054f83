"""SQLite state (SPEC §9 default): one WAL-mode file, writes batched off the request path.

`put`/`delete` only record the change in a pending map (last write per key wins); a background task
writes the map in one transaction every `flush_interval` seconds on a worker thread, so a request never
waits on disk. A value with a lifetime (`expiry.value_ttl`: session pins, signer entries) keeps its expiry
in its row: an expired row is never loaded, and the same task deletes expired rows every `prune_every`
seconds. A database that cannot be read is moved aside and replaced — losing measured state is
better than a gateway that will not start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from modelpool.state.base import StateBackend, decode, encode
from modelpool.state.expiry import value_ttl
from modelpool.state.filelock import FileLock

log = logging.getLogger(__name__)

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS kv ("
    "ns TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, updated REAL NOT NULL, expires REAL, "
    "PRIMARY KEY (ns, key))"
)
_ADD_EXPIRES = "ALTER TABLE kv ADD COLUMN expires REAL"  # a file written before values had a lifetime
_INDEX = "CREATE INDEX IF NOT EXISTS kv_expires ON kv (expires) WHERE expires IS NOT NULL"
_UPSERT = (
    "INSERT INTO kv (ns, key, value, updated, expires) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, updated = excluded.updated, "
    "expires = excluded.expires"
)
_DELETE = "DELETE FROM kv WHERE ns = ? AND key = ?"
_SELECT = "SELECT key, value FROM kv WHERE ns = ? AND (expires IS NULL OR expires > ?)"
_PRUNE = "DELETE FROM kv WHERE expires IS NOT NULL AND expires <= ?"

# SQLite primary result codes meaning "this file is not a usable database" (not "cannot open it").
_SQLITE_CORRUPT = 11
_SQLITE_NOTADB = 26

# (namespace, key) → (JSON text, or None for a delete; time of the put; when it expires, None: never)
_Pending = dict[tuple[str, str], tuple[str | None, float, float | None]]


class _Corrupt(sqlite3.DatabaseError):
    """Raised when the integrity check fails on an otherwise openable file."""


class SqliteBackend(StateBackend):
    name = "sqlite"

    def __init__(self, path: str | Path, *, flush_interval: float = 0.5, prune_every: float = 60.0) -> None:
        self.path = Path(path).expanduser()
        self.flush_interval = flush_interval
        self.prune_every = prune_every
        self._next_prune = 0.0
        self._pending: _Pending = {}
        self._conn: sqlite3.Connection | None = None
        # One connection shared by worker threads; the lock makes check_same_thread=False safe.
        self._db_lock = threading.Lock()
        self._flush_lock = asyncio.Lock()
        self._open_lock = asyncio.Lock()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._healthy = True
        self._last_error: str | None = None
        self._moved_aside: Path | None = None
        self._lock = FileLock(self.path)

    # -- lifecycle ---------------------------------------------------------------------------------

    async def start(self) -> None:
        self._lock.acquire()  # raises StateFileInUse: another process owns this file
        await self._ensure_open()
        if self._task is None:
            self._stop.clear()
            self._task = asyncio.create_task(self._flush_loop(), name="modelpool-sqlite-flush")

    async def close(self) -> None:
        if self._task is not None:
            # Let an in-flight flush finish rather than cancelling it halfway through a transaction.
            self._stop.set()
            await self._task
            self._task = None
        await self.flush()
        if self._pending:
            log.warning("state: %d writes could not be saved to %s", len(self._pending), self.path)
        if self._conn is not None:
            await asyncio.to_thread(self._close_conn)
        self._lock.release()

    async def _flush_loop(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=self.flush_interval)
            try:
                await self.flush()
                if time.monotonic() >= self._next_prune:
                    await self.prune()
            except Exception:  # the loop must outlive any single bad batch
                log.exception("state: flush to %s failed", self.path)

    async def _ensure_open(self) -> bool:
        if self._conn is not None:
            return True
        async with self._open_lock:  # a load racing the first flush must not open two connections
            if self._conn is not None:
                return True
            try:
                self._conn = await asyncio.to_thread(self._open)
            except (OSError, sqlite3.Error) as exc:
                self._mark_unhealthy(exc)
                return False
        self._mark_healthy()
        return True

    # -- writes ------------------------------------------------------------------------------------

    def put(self, namespace: str, key: str, value: Any) -> None:
        # Encoding here snapshots the value and surfaces a non-JSON value at the caller, not in the loop.
        now = time.time()
        ttl = value_ttl(namespace, key, value, now)
        self._pending[(namespace, key)] = (encode(value), now, None if ttl is None else now + ttl)

    def delete(self, namespace: str, key: str) -> None:
        self._pending[(namespace, key)] = (None, time.time(), None)

    async def flush(self) -> None:
        async with self._flush_lock:
            if not self._pending or not await self._ensure_open():
                return
            batch, self._pending = self._pending, {}
            try:
                await asyncio.to_thread(self._write, batch)
            except (OSError, sqlite3.Error) as exc:
                # Keep the batch for the next tick, unless a newer write to the same key superseded it.
                for item, op in batch.items():
                    self._pending.setdefault(item, op)
                self._mark_unhealthy(exc)
                return
            self._mark_healthy()

    async def prune(self) -> None:
        """Delete the rows whose lifetime is over."""
        self._next_prune = time.monotonic() + self.prune_every
        if not await self._ensure_open():
            return
        try:
            await asyncio.to_thread(self._prune, time.time())
        except (OSError, sqlite3.Error) as exc:
            self._mark_unhealthy(exc)

    # -- reads -------------------------------------------------------------------------------------

    async def load(self, namespace: str) -> dict[str, Any]:
        rows: list[tuple[str, str]] = []
        if await self._ensure_open():
            try:
                rows = await asyncio.to_thread(self._read, namespace, time.time())
            except (OSError, sqlite3.Error) as exc:
                self._mark_unhealthy(exc)
        result: dict[str, Any] = {}
        for key, text in rows:
            try:
                result[key] = decode(text)
            except orjson.JSONDecodeError:
                log.warning("state: skipping unreadable value %s/%s in %s", namespace, key, self.path)
        # Read-your-writes: changes not yet flushed are part of the state.
        now = time.time()
        for (ns, key), (pending, _, expires) in list(self._pending.items()):
            if ns != namespace:
                continue
            if pending is None or (expires is not None and expires <= now):
                result.pop(key, None)
            else:
                result[key] = decode(pending)
        return result

    # -- status ------------------------------------------------------------------------------------

    @property
    def healthy(self) -> bool:
        return self._healthy

    def describe(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "backend": self.name,
            "path": str(self.path),
            "healthy": self._healthy,
            "pending_writes": len(self._pending),
            "flush_interval": self.flush_interval,
        }
        if self._last_error:
            info["last_error"] = self._last_error
        if self._moved_aside:
            info["recovered_from"] = str(self._moved_aside)
        return info

    def _mark_healthy(self) -> None:
        if not self._healthy:
            log.info("state: %s is writable again", self.path)
        self._healthy = True
        self._last_error = None

    def _mark_unhealthy(self, exc: BaseException) -> None:
        # Log on the transition only: the flush loop retries twice a second.
        if self._healthy:
            log.warning("state: %s unavailable, serving on memory until it recovers: %s", self.path, exc)
        self._healthy = False
        self._last_error = f"{type(exc).__name__}: {exc}"

    # -- worker-thread side ------------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            return self._connect()
        except sqlite3.DatabaseError as exc:
            if not _is_corrupt(exc):
                raise
            self._moved_aside = self._move_aside()
            log.warning(
                "state: %s is unreadable (%s); moved it to %s and started a fresh database",
                self.path,
                exc,
                self._moved_aside,
            )
            return self._connect()

    def _connect(self) -> sqlite3.Connection:
        # Autocommit mode: transactions are explicit in _write, nothing is left open between flushes.
        conn = sqlite3.connect(self.path, timeout=5.0, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(_SCHEMA)
            if "expires" not in {row[1] for row in conn.execute("PRAGMA table_info(kv)")}:
                conn.execute(_ADD_EXPIRES)
            conn.execute(_INDEX)
            verdict = conn.execute("PRAGMA quick_check").fetchone()
            if not verdict or verdict[0] != "ok":
                raise _Corrupt(f"integrity check failed: {verdict!r}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _move_aside(self) -> Path:
        stamp = int(time.time())
        target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        n = 1
        while target.exists():
            target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{n}")
            n += 1
        # The WAL and shared-memory files belong to the broken database; a fresh one must not replay them.
        for suffix in ("", "-wal", "-shm"):
            src = Path(f"{self.path}{suffix}")
            if src.exists():
                os.replace(src, Path(f"{target}{suffix}"))
        return target

    def _write(self, batch: _Pending) -> None:
        puts = [(ns, key, text, ts, exp) for (ns, key), (text, ts, exp) in batch.items() if text is not None]
        deletes = [(ns, key) for (ns, key), (text, _, _) in batch.items() if text is None]
        with self._db_lock:
            conn = self._require_conn()
            conn.execute("BEGIN")
            try:
                conn.executemany(_UPSERT, puts)
                conn.executemany(_DELETE, deletes)
                conn.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise

    def _read(self, namespace: str, now: float) -> list[tuple[str, str]]:
        with self._db_lock:
            return list(self._require_conn().execute(_SELECT, (namespace, now)).fetchall())

    def _prune(self, now: float) -> None:
        with self._db_lock:
            self._require_conn().execute(_PRUNE, (now,))

    def _require_conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise sqlite3.OperationalError("state database is closed")
        return self._conn

    def _close_conn(self) -> None:
        with self._db_lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _is_corrupt(exc: sqlite3.DatabaseError) -> bool:
    if isinstance(exc, _Corrupt):
        return True
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB)
    text = str(exc).lower()
    return "not a database" in text or "malformed" in text
