"""The walk with a hedge (SPEC §3.7): the usual walk, except that a route's first try may get a rival.

The first try of a route runs as a racer. If it has produced no first event after the hedge delay, the
walk takes the next candidate of another provider off its list and starts it as a second racer; the
first to produce its first event wins and the other is cancelled. A racer that fails before the race is
decided is an ordinary failure (counted, rested) and the survivor goes on alone. The loser is only a
measurement: its wait so far goes into the route's time-to-first-event window, never a failure count.

Without a hedge (the first event came in time, the budget said no, no rival) the racer's outcome goes
through the usual retry logic, so a walk that never hedges behaves exactly like `Walker`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from modelpool.config.schema import HedgeConfig, PoolConfig
from modelpool.hedge.policy import HedgeBudget
from modelpool.hedge.race import Race, Racer
from modelpool.routing.call import Call, Candidate, Plan
from modelpool.upstream.client import AttemptFailure
from modelpool.walk.walker import Attempt, CommittedFailure, Consent, HealthSink, Walker

# (outcome, loser route, winner route): outcome is won_by_first | won_by_hedge | budget_refused
OnHedge = Callable[[str, str | None, str | None], None]


class HedgingWalker(Walker):
    def __init__(
        self,
        call: Call,
        plan: Plan,
        pool_cfg: PoolConfig,
        health: HealthSink,
        *,
        hedge: HedgeConfig,
        delay: Callable[[str], float],
        budget: HedgeBudget,
        measure: Callable[[str, float], None],
        on_hedge: OnHedge | None = None,
        on_switch: Callable[[str, str, str], None] | None = None,
        consent: Consent | None = None,
    ) -> None:
        super().__init__(call, plan, pool_cfg, health, on_switch=on_switch, consent=consent)
        self.hedge = hedge
        self._delay = delay
        self._budget = budget
        self._measure = measure
        self._on_hedge = on_hedge
        # Purpose calls, a forced route and `fallback: false` never hedge (SPEC §3.7).
        self._may_hedge = not call.purpose and call.forced_route is None and pool_cfg.fallback

    def _rival(self, cand: Candidate) -> Candidate | None:
        """The next candidate on another provider that is not resting."""
        for other in self.pending:
            if other.route.provider_id != cand.route.provider_id and not self.health.is_resting(other.key):
                return other
        return None

    async def _try_route(self, cand: Candidate, attempt: Attempt, retries: int) -> AttemptFailure | None:
        if not self._may_hedge or self.state.hedge_started or self._rival(cand) is None:
            return await super()._try_route(cand, attempt, retries)
        self.state.current = cand
        race = Race(self._won)
        first = race.start(cand, attempt)
        try:
            if not await self._hedge_after_delay(race, first, attempt):
                return await super()._try_route(cand, _resume(first, attempt), retries)
            return await self._finish_race(race)
        finally:
            await _stop(race)

    async def _hedge_after_delay(self, race: Race, first: Racer, attempt: Attempt) -> bool:
        """Wait for the first racer's first event up to the delay; True when a rival was started."""
        assert first.task is not None
        delay = self._delay(first.cand.key)
        done, _ = await asyncio.wait({first.task, race.decided}, timeout=delay)
        if done or race.closed:
            return False
        rival = self._rival(first.cand)
        if rival is None:
            return False
        if not self._budget.allow(self.hedge.budget):
            self.state.hedge_outcome = "budget_refused"
            if self._on_hedge is not None:
                self._on_hedge("budget_refused", first.cand.key, None)
            return False
        self._budget.note_hedge()
        self.pending.remove(rival)
        self.state.hedge_started = True
        race.start(rival, attempt)
        return True

    def _won(self, winner: Racer, losers: list[Racer]) -> None:
        """At the winner's first event, before it writes anything: it is the call's route from now on."""
        self.state.current = winner.cand
        if not losers:
            return  # alone (no rival, or the rival already failed): no race to report
        now = time.monotonic()
        for loser in losers:
            loser.noted = True
            # A censored sample: the loser's first event would have come no sooner than now.
            self._measure(loser.cand.key, now - loser.t0)
        race = winner.race
        outcome = "won_by_first" if winner is race.racers[0] else "won_by_hedge"
        self.state.hedged = f"{losers[0].cand.key} → {winner.cand.key}"
        self.state.hedge_outcome = outcome
        if self._on_hedge is not None:
            self._on_hedge(outcome, losers[0].cand.key, winner.cand.key)

    async def _finish_race(self, race: Race) -> AttemptFailure | None:
        last: AttemptFailure | None = None
        while race.winner is None:
            live = [r.task for r in race.racers if r.task is not None and not r.task.done()]
            if not live:
                return last  # both failed before either produced a first event: the walk goes on
            await asyncio.wait({*live, race.decided}, return_when=asyncio.FIRST_COMPLETED)
            if race.winner is not None:
                break  # a rival done by now was cancelled by the winner's claim: a loser, not a failure
            for racer in race.racers:
                if racer.done and not racer.noted:
                    last = self._failed_before_decision(racer) or last
        winner = race.winner
        losers = [r.task for r in race.racers if r is not winner and r.task is not None]
        await asyncio.gather(*losers, return_exceptions=True)  # cancelled at the claim: upstreams closed
        assert winner.task is not None
        try:
            result = await winner.task
        except CommittedFailure as exc:
            self._note_failure(winner.cand, exc.failure, False, believed=True)
            raise
        except AttemptFailure as failure:
            # After a hedge the walk does not retry either route: it goes on to the next candidate.
            self._note_failure(winner.cand, failure, False, believed=True)
            return failure
        self.health.success(winner.cand.key, result)
        return None

    def _failed_before_decision(self, racer: Racer) -> AttemptFailure | None:
        racer.noted = True
        assert racer.task is not None
        if racer.task.cancelled():
            return None
        exc = racer.task.exception()
        if isinstance(exc, AttemptFailure):
            self._note_failure(racer.cand, exc, False, believed=True)
            return exc
        if exc is not None:
            raise exc
        return None


def _resume(first: Racer, attempt: Attempt) -> Attempt:
    """The route's tries: the racer already running is the first one, the retries are ordinary attempts."""
    pending: asyncio.Task[Any] | None = first.task

    async def run(cand: Candidate) -> Any:
        nonlocal pending
        if pending is not None:
            task, pending = pending, None
            return await task
        return await attempt(cand)

    return run


async def _stop(race: Race) -> None:
    """Whatever ended the route's turn (result, failure, cancellation): no racer outlives it."""
    live = [r.task for r in race.racers if r.task is not None and not r.task.done()]
    for task in live:
        task.cancel()
    if live:
        await asyncio.gather(*live, return_exceptions=True)
