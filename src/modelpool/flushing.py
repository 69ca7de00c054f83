"""A book that gathers on the request path and writes to its store from the background (SPEC §9, §14).

The usage book and the session history book both keep what a call adds in memory (no I/O on a call's
path) and hand it to their store every `flush_interval` seconds; a store that fails keeps what it did not
take for the next tick, and the log says so once when it starts failing and once when it recovers. The
subclass says what a flush writes (`flush`) and names itself in the log (`what`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

log = logging.getLogger(__name__)


class FlushedBook:
    what = "book"  # in the log lines: "usage", "sessions"

    def __init__(self, store: Any, flush_interval: float) -> None:
        self.store = store
        self.flush_interval = flush_interval
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._failing = False

    async def flush(self) -> None:
        raise NotImplementedError

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name=f"modelpool-{self.what}-flush")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        with contextlib.suppress(Exception):
            await self.flush()
        await self.store.close()

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.flush_interval)
            try:
                await self.flush()
            except Exception as exc:  # kept for the next tick; the store may come back
                if not self._failing:  # log on the transition only: this loop retries every tick
                    log.warning("%s: could not write to the %s store: %s", self.what, self.store.name, exc)
                self._failing = True
            else:
                if self._failing:
                    log.info("%s: the %s store takes writes again", self.what, self.store.name)
                self._failing = False
