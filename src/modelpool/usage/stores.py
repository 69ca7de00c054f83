"""Where usage totals live (SPEC §14): memory, the sqlite file of the state backend, or Redis.

Every store only ever *adds* deltas (calls, tokens, cost) to rows keyed by (day, pool, route, key), so
several processes may write the same row: sqlite adds in one `UPSERT … SET x = x + excluded.x`
transaction, Redis with `HINCRBYFLOAT`. Writes come from the book's background flush, never a call.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from modelpool.state.side_tables import open_side_table

# `estimated`: calls whose tokens are an estimate from the text (the upstream reported no usage, SPEC §14).
METRICS = ("calls", "input", "cached", "cache_write", "output", "cost", "estimated")
RowKey = tuple[str, str, str, str]  # day (YYYY-MM-DD, UTC), pool, route, key label
Deltas = dict[RowKey, list[float]]
Row = tuple[str, str, str, str, list[float]]


def in_range(day: str, since: str | None, until: str | None) -> bool:
    return (since is None or day >= since) and (until is None or day <= until)


class UsageStore:
    name = "abstract"

    async def add(self, deltas: Deltas) -> None:
        raise NotImplementedError

    async def rows(self, since: str | None, until: str | None) -> list[Row]:
        raise NotImplementedError

    async def close(self) -> None:
        return None


class MemoryUsageStore(UsageStore):
    name = "memory"

    def __init__(self) -> None:
        self.totals: Deltas = {}

    async def add(self, deltas: Deltas) -> None:
        merge(self.totals, deltas)

    async def rows(self, since: str | None, until: str | None) -> list[Row]:
        return [(*k, list(v)) for k, v in self.totals.items() if in_range(k[0], since, until)]


def merge(into: Deltas, deltas: Deltas) -> None:
    for key, values in deltas.items():
        row = into.get(key)
        if row is None:
            into[key] = list(values)
        else:
            for i, v in enumerate(values):
                row[i] += v


_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS usage (day TEXT NOT NULL, pool TEXT NOT NULL, route TEXT NOT NULL, "
    "key TEXT NOT NULL, calls REAL NOT NULL DEFAULT 0, input REAL NOT NULL DEFAULT 0, "
    "cached REAL NOT NULL DEFAULT 0, cache_write REAL NOT NULL DEFAULT 0, output REAL NOT NULL DEFAULT 0, "
    "cost REAL NOT NULL DEFAULT 0, estimated REAL NOT NULL DEFAULT 0, PRIMARY KEY (day, pool, route, key))"
)
# A file written before `estimated` existed gets the column (every row: no estimated calls).
_MIGRATE = "ALTER TABLE usage ADD COLUMN estimated REAL NOT NULL DEFAULT 0"
_ADD = (
    "INSERT INTO usage (day, pool, route, key, " + ", ".join(METRICS) + ") "
    "VALUES (?, ?, ?, ?, " + ", ".join("?" for _ in METRICS) + ") ON CONFLICT (day, pool, route, key) "
    "DO UPDATE SET " + ", ".join(f"{m} = {m} + excluded.{m}" for m in METRICS)
)


class SqliteUsageStore(UsageStore):
    """A `usage` table in the state backend's sqlite file, on a connection of its own (WAL lets it
    write beside the backend's), used from a worker thread."""

    name = "sqlite"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = open_side_table(self.path, [_SCHEMA])
            columns = {row[1] for row in conn.execute("PRAGMA table_info(usage)")}
            if "estimated" not in columns:
                conn.execute(_MIGRATE)
            self._conn = conn
        return self._conn

    async def add(self, deltas: Deltas) -> None:
        params = [(*k, *v) for k, v in deltas.items()]
        await asyncio.to_thread(self._add, params)

    def _add(self, params: list[tuple[Any, ...]]) -> None:
        with self._lock:
            conn = self._db()
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(_ADD, params)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    async def rows(self, since: str | None, until: str | None) -> list[Row]:
        return await asyncio.to_thread(self._rows, since or "", until or "9999-12-31")

    def _rows(self, since: str, until: str) -> list[Row]:
        with self._lock:
            cur = self._db().execute(
                "SELECT day, pool, route, key, " + ", ".join(METRICS) + " FROM usage "
                "WHERE day >= ? AND day <= ?",
                (since, until),
            )
            return [(r[0], r[1], r[2], r[3], [float(x) for x in r[4:]]) for r in cur.fetchall()]

    async def close(self) -> None:
        def _close() -> None:
            with self._lock:
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None

        await asyncio.to_thread(_close)


SEP = "\x1f"


class RedisUsageStore(UsageStore):
    """One hash per day (`{prefix}:usage:{day}`), a field per row and metric, and a set of the days."""

    name = "redis"

    def __init__(self, url: str, prefix: str) -> None:
        import redis.asyncio as aioredis

        self.client = aioredis.Redis.from_url(url, socket_timeout=2.0, socket_connect_timeout=1.0)
        self.prefix = prefix

    def _day_key(self, day: str) -> str:
        return f"{self.prefix}:usage:{day}"

    async def add(self, deltas: Deltas) -> None:
        pipe: Any = self.client.pipeline(transaction=True)
        days = set()
        for (day, pool, route, key), values in deltas.items():
            days.add(day)
            head = SEP.join((pool, route, key))
            for metric, v in zip(METRICS, values, strict=True):
                if v:
                    pipe.hincrbyfloat(self._day_key(day), head + SEP + metric, v)
        if days:
            pipe.sadd(f"{self.prefix}:usage:days", *days)
        await pipe.execute()

    async def rows(self, since: str | None, until: str | None) -> list[Row]:
        days = sorted(
            d.decode() if isinstance(d, bytes) else d
            for d in await self.client.smembers(f"{self.prefix}:usage:days")  # type: ignore[misc]
        )
        out: dict[RowKey, list[float]] = {}
        for day in (d for d in days if in_range(d, since, until)):
            fields = await self.client.hgetall(self._day_key(day))  # type: ignore[misc]
            for name, value in fields.items():
                text = name.decode() if isinstance(name, bytes) else name
                pool, route, key, metric = text.split(SEP)
                if metric not in METRICS:
                    continue  # written by a newer version: not ours to read
                row = out.setdefault((day, pool, route, key), [0.0] * len(METRICS))
                row[METRICS.index(metric)] = float(value)
        return [(*k, v) for k, v in out.items()]

    async def close(self) -> None:
        await self.client.aclose()


def group(rows: Iterable[Row], by: str) -> list[dict[str, Any]]:
    """Rows summed by `pool`, `route`, `key` or `day`, biggest spend first (days in date order)."""
    index = {"day": 0, "pool": 1, "route": 2, "key": 3}[by]
    sums: dict[str, list[float]] = {}
    for row in rows:
        values = row[4]
        acc = sums.setdefault(str(row[index]), [0.0] * len(METRICS))
        for i, v in enumerate(values):
            acc[i] += v
    out: list[dict[str, Any]] = [
        {
            by: name,
            "calls": int(v[0]),
            "tokens_in": int(v[1]),
            "tokens_cached": int(v[2]),
            "tokens_cache_write": int(v[3]),
            "tokens_out": int(v[4]),
            "cost_usd": round(v[5], 10),
            "estimated": int(v[6]),  # calls counted from an estimate of their text, not upstream usage
        }
        for name, v in sums.items()
    ]
    if by == "day":
        out.sort(key=lambda r: r["day"])
    else:
        out.sort(key=lambda r: (-r["cost_usd"], -r["calls"], r[by]))
    return out
