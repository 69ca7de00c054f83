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
from dataclasses import dataclass
from typing import Any

from modelpool.config.schema import HedgeConfig, PoolConfig
from modelpool.hedge.policy import HedgeBudget, Quantile, hedge_delay
from modelpool.hedge.race import RACER, Race, Racer
from modelpool.routing.call import Call, Candidate, Plan
from modelpool.upstream.client import AttemptFailure
from modelpool.walk.walker import Attempt, CommittedFailure, Consent, HealthSink, Walker

# The engine's event feed: publish(type, **fields). A hedge is reported as a `hedge` event with its outcome
# (won_by_first | won_by_hedge | budget_refused), the loser and the winner route, the pool and the session.
Publish = Callable[..., Any]


@dataclass(frozen=True, slots=True)
class HedgeParts:
    """What every hedging walk of a runtime shares: `pool.hedge`, the route's first-event quantile, the
    budget, where a loser's wait is measured and where a hedge is reported. Built once per runtime by
    the engine, so a walk's construction is a few attribute stores (issue #29)."""

    hedge: HedgeConfig
    quantile: Quantile
    budget: HedgeBudget
    measure: Callable[[str, float], None]
    publish: Publish | None = None


class HedgingWalker(Walker):
    def __init__(
        self,
        call: Call,
        plan: Plan,
        pool_cfg: PoolConfig,
        health: HealthSink,
        parts: HedgeParts,
        on_switch: Callable[[str, str, str], None] | None = None,
        consent: Consent | None = None,
    ) -> None:
        super().__init__(call, plan, pool_cfg, health, on_switch=on_switch, consent=consent)
        self.hedge = parts.hedge
        self._parts = parts
        # Purpose calls, a forced route and `fallback: false` never hedge (SPEC §3.7).
        self._may_hedge = not call.purpose and call.forced_route is None and pool_cfg.fallback

    def _on_hedge(self, outcome: str, loser: str | None, winner: str | None) -> None:
        publish = self._parts.publish
        if publish is not None:
            fields = {"pool": self.call.pool.id, "session": self.call.session_id}
            publish("hedge", outcome=outcome, loser=loser, winner=winner, **fields)

    def _rival(self, cand: Candidate) -> Candidate | None:
        """The next candidate on another provider that is not resting."""
        for other in self.pending:
            if other.route.provider_id != cand.route.provider_id and not self.health.is_resting(other.key):
                return other
        return None

    def _may_have_rival(self, cand: Candidate) -> bool:
        """Whether a rival could start: a candidate on another provider is left. Whether it rests is
        asked only when the delay passed (`_fire`): a race with no rival by then is the plain walk."""
        provider = cand.route.provider_id
        for other in self.pending:  # noqa: SIM110 (no generator object per call)
            if other.route.provider_id != provider:
                return True
        return False

    async def _try_route(self, cand: Candidate, attempt: Attempt, retries: int) -> AttemptFailure | None:
        if not self._may_hedge or self.state.hedge_started or not self._may_have_rival(cand):
            return await super()._try_route(cand, attempt, retries)
        self.state.current = cand
        race = Race(self._won)
        first = race.inline(cand)
        loop = asyncio.get_running_loop()
        delay = hedge_delay(self.hedge, cand.key, self._parts.quantile)
        timer = loop.call_later(delay, self._fire, race, first, attempt)
        try:
            try:
                outcome = await self._first_try(race, first, attempt)
            finally:
                timer.cancel()  # once the first try is over no hedge starts
            if outcome is None:  # the rival won, or the first failed while the rival runs
                return await self._finish_race(race)
            if len(race.racers) > 1:  # a rival that failed before the first try ended is one failure
                for racer in race.racers:
                    if racer.done and not racer.noted and not racer.inline:
                        self._failed_before_decision(racer)
            elif outcome.error is None:
                # Served alone, as nearly always: what `Walker._try_route` does with a first try that
                # succeeded, without replaying it through a closure and a coroutine more (issue #29).
                self.health.success(cand.key, outcome.result)
                return None
            return await super()._try_route(cand, _replay(outcome, attempt), retries)
        finally:
            if len(race.racers) > 1:  # only a started rival can outlive the turn
                await _stop(race)
            race.close()

    async def _first_try(self, race: Race, first: Racer, attempt: Attempt) -> _Outcome | None:
        """The route's first try, in this task, as the race's first racer: its outcome for the ordinary
        retry logic, or None when the race goes on without it (it lost; it failed while a rival runs)."""
        token = RACER.set(first)
        outcome: _Outcome | None
        try:
            outcome = _Outcome(await attempt(first.cand))
        except asyncio.CancelledError:
            if not race.cut_inline:
                raise  # the client left (or the server stops): not the race's doing
            outcome = None
        except Exception as exc:  # replayed into `Walker._try_route`, which knows what each means
            outcome = _Outcome(None, exc)
        finally:
            first.finished = True
            RACER.reset(token)
        if race.cut_inline:
            await _absorb_cut(outcome is not None)
            first.noted = True  # a loser is a measurement only (`_won`)
            return None
        assert outcome is not None
        if isinstance(outcome.error, AttemptFailure) and race.winner is None and race.tasks(live=True):
            # A failing racer lets the other go on (SPEC §3.7): counted now, the rival decides the turn.
            first.noted = True
            self._note_failure(first.cand, outcome.error, False, believed=True)
            return None
        return outcome

    def _fire(self, race: Race, first: Racer, attempt: Attempt) -> None:
        """The hedge delay passed (a timer callback): start a rival unless the first try is over."""
        if race.winner is not None or first.finished or race.closed:
            return
        rival = self._rival(first.cand)
        if rival is None:
            return
        budget = self._parts.budget
        if not budget.allow(self.hedge.budget):
            self.state.hedge_outcome = "budget_refused"
            self._on_hedge("budget_refused", first.cand.key, None)
            return
        budget.note_hedge()
        self.pending.remove(rival)
        self.state.hedge_started = True
        race.start(rival, attempt)

    def _won(self, winner: Racer, losers: list[Racer]) -> None:
        """At the winner's first event, before it writes anything: it is the call's route from now on."""
        self.state.current = winner.cand
        if not losers:
            return  # alone (no rival, or the rival already failed): no race to report
        now = time.monotonic()
        for loser in losers:
            loser.noted = True
            # A censored sample: the loser's first event would have come no sooner than now.
            self._parts.measure(loser.cand.key, now - loser.t0)
        race = winner.race
        outcome = "won_by_first" if winner is race.racers[0] else "won_by_hedge"
        self.state.hedged = f"{losers[0].cand.key} → {winner.cand.key}"
        self.state.hedge_outcome = outcome
        self._on_hedge(outcome, losers[0].cand.key, winner.cand.key)

    async def _finish_race(self, race: Race) -> AttemptFailure | None:
        last: AttemptFailure | None = None
        while race.winner is None:
            live = race.tasks(live=True)
            if not live:
                return last  # both failed before either produced a first event: the walk goes on
            await asyncio.wait({*live, race.decided}, return_when=asyncio.FIRST_COMPLETED)
            if race.winner is not None:
                break  # a rival done by now was cancelled by the winner's claim: a loser, not a failure
            for racer in race.racers:
                if racer.done and not racer.noted:
                    last = self._failed_before_decision(racer) or last
        winner = race.winner
        losers = [t for t in race.tasks() if t is not winner.task]
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


class _Outcome:
    """How the first try ended: its result, or the exception it raised."""

    __slots__ = ("error", "result")

    def __init__(self, result: Any, error: Exception | None = None) -> None:
        self.result = result
        self.error = error


def _replay(outcome: _Outcome, attempt: Attempt) -> Attempt:
    """The route's tries for `Walker._try_route`: the first one already happened (its outcome is replayed),
    the retries are ordinary attempts."""
    pending: list[_Outcome] = [outcome]

    async def run(c: Candidate) -> Any:
        if pending:
            done = pending.pop()
            if done.error is not None:
                raise done.error
            return done.result
        return await attempt(c)

    return run


async def _absorb_cut(pending: bool) -> None:
    """The rival's claim cancelled this task to stop the first try: take that cancellation back. When
    the first try ended before the cancellation reached it (`pending`), it is delivered here first. A
    second cancellation (the client left too) still stops the walk."""
    if pending:
        try:
            await asyncio.sleep(0)
        except asyncio.CancelledError:
            pass
    task = asyncio.current_task()
    assert task is not None
    if task.uncancel() > 0:
        raise asyncio.CancelledError


async def _stop(race: Race) -> None:
    """Whatever ended the route's turn (result, failure, cancellation): no racer outlives it."""
    live = race.tasks(live=True)
    for task in live:
        task.cancel()
    if live:
        await asyncio.gather(*live, return_exceptions=True)
