"""The session history book: a finished call is appended to a list (nothing else on the request path);
a background task turns the pending calls into entries and hands them to the store every
`FLUSH_INTERVAL` seconds, so neither the entry's construction nor the state backend is ever on a call's
path. Reads (admin API, dashboard, CLI) flush first and read the store, which every replica writes with
redis.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from modelpool.flushing import FlushedBook
from modelpool.history.stores import Entry, HistoryStore, Limits

log = logging.getLogger(__name__)

FLUSH_INTERVAL = 0.5
MAX_RETRY = 20_000  # call entries held for a store that is down; the oldest go first beyond this
# Calls described and stored per turn of the event loop: at 1,000 calls/s a flush has 500 of them, 5–14 ms
# of CPU that in one go delayed whichever call was in flight (issue #29). A call's next step may wait for a
# few slices in a row (each of its steps is a turn of the loop of its own), so a slice is kept to ~0.3 ms.
SLICE = 16
# The face that records calls says how one of its call records becomes (session id, entry) — or None for a
# call that belongs to no session. Called in the background, with `wall_at_mono` turning the record's
# monotonic start into wall time.
Describe = Callable[[Any, Callable[[float], float]], tuple[str, Entry] | None]


def _no_describe(item: Any, wall_at_mono: Callable[[float], float]) -> tuple[str, Entry] | None:
    return item if isinstance(item, tuple) else None


class SessionHistory(FlushedBook):
    what = "sessions"
    store: HistoryStore

    def __init__(
        self,
        store: HistoryStore,
        limits: Callable[[], Limits],
        clock: Callable[[], float] = time.time,
        flush_interval: float = FLUSH_INTERVAL,
    ) -> None:
        super().__init__(store, flush_interval)
        self.limits = limits
        self.clock = clock
        self.describe: Describe = _no_describe
        self.pending: list[Any] = []  # the request path's only touch: `pending.append(record)`
        self._retry: list[tuple[str, Entry]] = []  # entries a failing store did not take yet

    def add(self, record: Any) -> None:
        """One finished call; returns at once (a list append)."""
        self.pending.append(record)

    async def _entries(self) -> list[tuple[str, Entry]]:
        records = self.pending.copy()
        self.pending.clear()  # in place: the face appends to this very list
        mono, wall = time.monotonic(), self.clock()

        def wall_at(t: float) -> float:
            return wall - (mono - t)

        out = self._retry
        self._retry = []
        i = 0
        try:
            for i, record in enumerate(records):
                if i and not i % SLICE:
                    await asyncio.sleep(0)  # the calls in flight go on between slices
                records[i] = None  # freed here, in its slice: 500 calls freed at once took ~5 ms
                try:
                    item = self.describe(record, wall_at)
                except Exception:  # one odd record must not lose the others
                    log.exception("sessions: could not describe a call")
                    continue
                finally:
                    del record
                if item is not None:
                    out.append(item)
        except BaseException:  # cancelled between two slices (close): nothing taken is lost
            self._retry = out + self._retry
            self.pending[:0] = [r for r in records[i:] if r is not None]
            raise
        return out

    async def flush(self) -> None:
        async with self._lock:
            batch = await self._entries()
            done = 0
            try:
                while done < len(batch):
                    if done:
                        await asyncio.sleep(0)
                    await self.store.add(batch[done : done + SLICE], self.clock(), self.limits())
                    done += SLICE
            except BaseException:
                self._retry = (
                    batch[done:] + self._retry
                )  # what the store did not take goes with the next flush
                over = len(self._retry) - MAX_RETRY
                if over > 0:  # a long outage: keep the newest calls, say what was let go
                    del self._retry[:over]
                    log.warning(
                        "sessions: the %s store is down; %d oldest call entries dropped",
                        self.store.name,
                        over,
                    )
                raise

    async def session(self, sid: str) -> dict[str, Any] | None:
        """A session's summary and its kept calls (oldest first), or None when it has none."""
        with contextlib.suppress(Exception):
            await self.flush()
        return await self.store.session(sid, self.clock(), self.limits())

    async def summaries(self, limit: int) -> list[dict[str, Any]]:
        """The most recently active sessions' summaries, newest first."""
        with contextlib.suppress(Exception):
            await self.flush()
        return await self.store.summaries(limit, self.clock(), self.limits())
