"""Model discovery that does not give up at start-up (issue #25).

A local server started together with the gateway (llama.cpp's `llama-server` answers `503 Loading model`
until its weights are in memory) would otherwise leave its provider with no models until the next config
change. While any provider's model list failed, discovery runs again in the background with a growing
pause (1 s, 2 s, 4 s … at most a minute), and each success re-pools live. Never on a call's path.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger("modelpool.discovery")

FIRST_PAUSE = 1.0
MAX_PAUSE = 60.0


class DiscoveryRetry:
    def __init__(self, failing: Callable[[], bool], rediscover: Callable[[], Awaitable[None]]) -> None:
        self._failing = failing  # whether some provider's last model list failed
        self._rediscover = rediscover  # discovery for every provider, then the runtime rebuilt
        self._task: asyncio.Task[None] | None = None

    def check(self) -> None:
        """After a discovery: keep retrying while something failed (one background task at most)."""
        if self._failing() and (self._task is None or self._task.done()):
            self._task = asyncio.create_task(self._loop())

    async def _loop(self) -> None:
        pause = FIRST_PAUSE
        while self._failing():
            await asyncio.sleep(pause)
            pause = min(pause * 2, MAX_PAUSE)
            try:
                await self._rediscover()
            except Exception:  # a bad moment (config being replaced): try again at the next pause
                log.debug("background model discovery failed", exc_info=True)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
