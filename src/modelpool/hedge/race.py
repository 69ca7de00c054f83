"""Racing attempts: the first to produce its first event wins, the other is cancelled at once.

A racer runs the relay's ordinary `attempt(candidate)` in its own task, with `RACER` set in that task's
context. A relay that sees `RACER` keeps the attempt off the client (its own `ClientStream`, its start
gated) and calls `claim()` at the moment it would first write — the attempt's first reasoning/answer
event — or, non-streamed, once the whole answer arrived. The first claim wins: the rival's task is
cancelled (its relay closes the upstream response on `CancelledError`), and the winner then writes
through. A later claim by the loser never returns: it is being cancelled.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

from modelpool.routing.call import Candidate

Attempt = Callable[[Candidate], Awaitable[Any]]


class Racer:
    __slots__ = ("cand", "noted", "race", "t0", "task")

    def __init__(self, race: Race, cand: Candidate) -> None:
        self.race = race
        self.cand = cand
        self.t0 = time.monotonic()
        self.task: asyncio.Task[Any] | None = None
        self.noted = False  # the walker has taken this racer's outcome into account

    async def claim(self) -> None:
        await self.race.claim(self)

    @property
    def done(self) -> bool:
        return self.task is not None and self.task.done()


RACER: ContextVar[Racer | None] = ContextVar("modelpool_racer", default=None)


class Race:
    def __init__(self, on_win: Callable[[Racer, list[Racer]], None]) -> None:
        self.racers: list[Racer] = []
        self.winner: Racer | None = None
        # The client has already seen something (an earlier attempt's reasoning): a relay says so and the
        # walk does not hedge — two racers could not both continue that one stream.
        self.closed = False
        self.decided: asyncio.Future[Racer] = asyncio.get_running_loop().create_future()
        self._on_win = on_win

    def start(self, cand: Candidate, attempt: Attempt) -> Racer:
        racer = Racer(self, cand)

        async def run() -> Any:
            RACER.set(racer)  # this task's own context: the walker's context is untouched
            return await attempt(cand)

        racer.task = asyncio.create_task(run())
        self.racers.append(racer)
        return racer

    async def claim(self, racer: Racer) -> None:
        if self.winner is None:
            self.winner = racer
            losers = self.rivals_alive(racer)
            self._on_win(racer, losers)
            for other in losers:
                assert other.task is not None
                other.task.cancel()  # at once: its relay closes the upstream connection
            if not self.decided.done():
                self.decided.set_result(racer)
            return
        if self.winner is racer:
            return
        await asyncio.get_running_loop().create_future()  # the loser waits for its cancellation

    def rivals_alive(self, racer: Racer) -> list[Racer]:
        return [r for r in self.racers if r is not racer and not r.done]
