"""The usage book (SPEC §14): what every call used and cost, summed per (day, pool, route, key).

A finished call adds to a local dict (no I/O); a background task hands the deltas to the store every
`FLUSH_INTERVAL` seconds, so the state backend is never on a call's path. Queries flush first and read
the store, which every replica writes (sqlite: this process; Redis: all of them).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from modelpool.flushing import FlushedBook
from modelpool.usage.stores import METRICS, Deltas, Row, UsageStore, group, merge

FLUSH_INTERVAL = 1.0


def utc_day(now: float) -> str:
    return datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%d")


class UsageBook(FlushedBook):
    what = "usage"
    store: UsageStore

    def __init__(self, store: UsageStore, flush_interval: float = FLUSH_INTERVAL) -> None:
        super().__init__(store, flush_interval)
        self._pending: Deltas = {}
        self._day_cache: tuple[int, str] = (-1, "")

    def day(self, now: float) -> str:
        minute = int(now // 60)
        if self._day_cache[0] != minute:  # one strftime per minute, not per call
            self._day_cache = (minute, utc_day(now))
        return self._day_cache[1]

    def record(
        self,
        now: float,
        pool: str,
        route: str,
        key: str,
        usage: Mapping[str, int] | None,
        cost: float | None,
        estimated: bool = False,
    ) -> None:
        """One call; returns at once. `estimated`: its usage is an estimate from the text."""
        row_key = (self.day(now), pool, route, key)
        row = self._pending.get(row_key)
        if row is None:
            row = self._pending[row_key] = [0.0] * len(METRICS)
        row[0] += 1
        if estimated:
            row[6] += 1
        if usage:
            row[1] += usage.get("prompt_tokens") or 0
            row[2] += usage.get("cached_tokens") or 0
            row[3] += usage.get("cache_creation_tokens") or 0
            row[4] += usage.get("completion_tokens") or 0
        if cost:
            row[5] += cost

    async def flush(self) -> None:
        async with self._lock:
            if not self._pending:
                return
            batch, self._pending = self._pending, {}
            try:
                await self.store.add(batch)
            except BaseException:
                merge(self._pending, batch)  # nothing is lost; it goes with the next flush
                raise

    async def rows(self, since: str | None = None, until: str | None = None) -> list[Row]:
        with contextlib.suppress(Exception):
            await self.flush()
        rows = await self.store.rows(since, until)
        if self._pending:  # a store that failed to take the latest deltas: still part of the answer
            extra: Deltas = {}
            merge(extra, self._pending)
            merged: Deltas = {(r[0], r[1], r[2], r[3]): list(r[4]) for r in rows}
            merge(merged, {k: v for k, v in extra.items() if since is None or k[0] >= since})
            rows = [(*k, v) for k, v in merged.items() if until is None or k[0] <= until]
        return rows

    async def report(self, by: str, since: str | None, until: str | None) -> dict[str, Any]:
        rows = await self.rows(since, until)
        total = group([("all", "", "", "", r[4]) for r in rows], "day")
        empty = group([("all", "", "", "", [0.0] * len(METRICS))], "day")
        summary = (total or empty)[0]
        summary.pop("day", None)
        return {"group_by": by, "since": since, "until": until, "rows": group(rows, by), "total": summary}
