"""Racing attempts: the first to produce its first event wins, the other is cancelled at once.

A racer runs the relay's ordinary `attempt(candidate)` with `RACER` set in its context. A relay that sees
`RACER` keeps the attempt off the client (its own `ClientStream`, its start gated) and calls `claim()` at
the moment it would first write — the attempt's first reasoning/answer event — or, non-streamed, once
the whole answer arrived. The first claim wins: the rival is cancelled (its relay closes the upstream
response on `CancelledError`), and the winner then writes through. A later claim by the loser never
returns: it is being cancelled.

The first racer runs inline, in the walk's own task (`Race.inline`): a hedge that never fires — nearly
every call — then costs no task, no future and no wait, only a timer armed and cancelled (issue #21).
Only the rival, started when the timer fires, gets a task. When the rival wins, the walk's task is
cancelled to stop the first attempt, and the walk takes that cancellation back (`Race.cut_inline`).
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
    __slots__ = ("cand", "finished", "inline", "noted", "race", "t0", "task")

    def __init__(self, race: Race, cand: Candidate, task: asyncio.Task[Any] | None = None) -> None:
        self.race = race
        self.cand = cand
        self.t0 = time.monotonic()
        self.task = task  # an inline racer's is the walk's own task
        self.inline = task is not None
        self.finished = False  # an inline racer's attempt has returned or raised
        self.noted = False  # the walker has taken this racer's outcome into account

    async def claim(self) -> None:
        race = self.race
        if race.winner is None and len(race.racers) == 1:  # alone, as nearly always: no coroutine more
            race.winner = self
            race._on_win(self, [])
            if race._decided is not None and not race._decided.done():
                race._decided.set_result(self)
            return
        await race.claim(self)

    @property
    def done(self) -> bool:
        if self.inline:
            return self.finished
        return self.task is not None and self.task.done()


RACER: ContextVar[Racer | None] = ContextVar("modelpool_racer", default=None)


def _after_the_turn(winner: Racer, losers: list[Racer]) -> None:
    return None  # a closed race has no one to tell: nothing is left to win (`Race.close`)


class Race:
    def __init__(self, on_win: Callable[[Racer, list[Racer]], None]) -> None:
        self.racers: list[Racer] = []
        self.winner: Racer | None = None
        self.closed = False
        self.cut_inline = False  # the inline racer lost: its (the walk's) task was cancelled for it
        self._decided: asyncio.Future[Racer] | None = None
        self._on_win = on_win

    @property
    def decided(self) -> asyncio.Future[Racer]:
        """Resolved at the first claim; made only when someone waits for it (a rival was started)."""
        if self._decided is None:
            self._decided = asyncio.get_running_loop().create_future()
            if self.winner is not None:
                self._decided.set_result(self.winner)
        return self._decided

    def inline(self, cand: Candidate) -> Racer:
        """The first racer, run by the caller in its own task (see the module doc)."""
        task = asyncio.current_task()
        assert task is not None
        racer = Racer(self, cand, task)
        self.racers.append(racer)
        return racer

    def start(self, cand: Candidate, attempt: Attempt) -> Racer:
        racer = Racer(self, cand)

        async def run() -> Any:
            RACER.set(racer)  # this task's own context: the walker's context is untouched
            return await attempt(cand)

        racer.task = asyncio.create_task(run())
        self.racers.append(racer)
        return racer

    def tasks(self, live: bool = False) -> list[asyncio.Task[Any]]:
        """The started (not inline) racers' tasks; `live`: only those still running."""
        return [r.task for r in self.racers if not r.inline and r.task is not None and not (live and r.done)]

    async def claim(self, racer: Racer) -> None:
        if self.winner is None and not self.closed:  # closed: the turn is over, nothing left to win
            self.winner = racer
            losers = self.rivals_alive(racer)
            self._on_win(racer, losers)
            for other in losers:
                assert other.task is not None
                if other.inline:
                    self.cut_inline = True
                other.task.cancel()  # at once: its relay closes the upstream connection
            if self._decided is not None and not self._decided.done():
                self._decided.set_result(racer)
            return
        if self.winner is racer:
            return
        await asyncio.get_running_loop().create_future()  # the loser waits for its cancellation

    def close(self) -> None:
        """The route's turn is over and no racer runs: let go of the racers. A racer and its race refer
        to each other, so without this every hedged call — its walk, its relay, its parsed body — would
        wait for the cycle collector instead of going when its last reference does (issue #29)."""
        self.closed = True
        self.racers = []
        self.winner = None
        self._decided = None
        # A racer can outlive its turn in a context copied while it ran (asyncio keeps a cancelled timer,
        # and its context, until the timer's time): through the race it must not keep the walk.
        self._on_win = _after_the_turn

    def rivals_alive(self, racer: Racer) -> list[Racer]:
        return [r for r in self.racers if r is not racer and not r.done]
