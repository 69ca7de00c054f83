"""When to hedge (`pool.hedge.after`) and whether the budget allows it (`pool.hedge.budget`)."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from modelpool.config.schema import HedgeConfig

MIN_SAMPLES = 5  # SPEC §3.7: a route with fewer samples waits `max_delay`
BUDGET_WINDOW = 60.0  # the budget is a share of the last minute's calls

Quantile = Callable[[str, float], tuple[float | None, int]]


def hedge_delay(cfg: HedgeConfig, route_key: str, quantile: Quantile) -> float:
    """Seconds to wait for the route's first event before hedging: a fixed duration, or the route's own
    recent pNN time-to-first-event clamped to [min_delay, max_delay]."""
    if not isinstance(cfg.after, str):
        return cfg.after
    value, n = quantile(route_key, float(cfg.after[1:]) / 100)
    if value is None or n < MIN_SAMPLES:
        return cfg.max_delay
    return min(max(value, cfg.min_delay), cfg.max_delay)


class HedgeBudget:
    """At most `budget` × (calls of the last minute) hedges in that minute, so a fleet-wide slowdown — every
    call slow — cannot double the upstream traffic. Per process, in memory, constant time per call."""

    __slots__ = ("_calls", "_clock", "_hedges")

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._calls: deque[float] = deque()
        self._hedges: deque[float] = deque()

    def note_call(self) -> None:
        now = self._clock()
        self._calls.append(now)
        self._trim(now)

    def allow(self, share: float) -> bool:
        self._trim(self._clock())
        return len(self._hedges) < share * len(self._calls)

    def note_hedge(self) -> None:
        self._hedges.append(self._clock())

    def _trim(self, now: float) -> None:
        horizon = now - BUDGET_WINDOW
        for q in (self._calls, self._hedges):
            while q and q[0] < horizon:
                q.popleft()
