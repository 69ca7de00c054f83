"""The eight strategies of SPEC §3.1 step 5. Each orders candidates already in base order.

Every strategy is stable: Python's sort keeps equal keys in base order, so ties are settled by the
provider priority (or the period's order) exactly as the seed requires.

Each candidate comes with the reason of its position as a `Why`: the text, or a format and its number.
Most of a pool's candidates fall beyond `max_attempts` and the plan reports only their key, so the planner
formats the text (`why_text`) only for the candidates it keeps.
"""

from __future__ import annotations

import random
from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Protocol

from modelpool.routing.call import Candidate


class Measurements(Protocol):
    """What strategies read about a route (the health registry implements it)."""

    def version(self) -> int: ...  # changes whenever any value below may have changed
    def ewma_ttft(self, route_key: str) -> float | None: ...
    def median_ttft(self, route_key: str) -> float | None: ...
    def median_tps(self, route_key: str) -> float | None: ...
    def served(self, route_key: str) -> int: ...
    def laplace(self, route_key: str) -> float: ...
    def sampled(self, route_key: str) -> tuple[int, float | None]: ...  # (window samples, newest at)
    def unsettled(self, route_key: str) -> bool: ...  # its newest sample disagreed with its estimate


@dataclass(slots=True)
class StrategyInput:
    measurements: Measurements
    weights: Mapping[str, float]  # by route key
    costs: Mapping[str, float | None]  # by route key, for the period in force
    # Published speed (aggregator stats, SPEC §3.4) and time to first token (seconds): read through
    # `published_tps` / `published_ttft`, which note that the ranking used them.
    prior_tps: Callable[[Candidate], float | None]
    prior_ttft: Callable[[Candidate], float | None]
    cursor: Callable[[str], int]  # round-robin: next cursor value for a pool
    pool_id: str
    requested: str
    score_weights: tuple[float, float]
    prefer_same_model: bool
    rng: random.Random
    now: float = 0.0  # clock time of the plan: how old a route's own samples are
    # Published stats change on their own, not with the measurements' version: a ranking that read them
    # must not be memoised.
    priors_read: bool = False
    # `cheapest` with known prices (SPEC §14): route key → (expected cost of this call, reason), or None.
    expected_cost: Callable[[str], tuple[float, Why] | None] | None = None

    def published_tps(self, c: Candidate) -> float | None:
        self.priors_read = True
        return self.prior_tps(c)

    def published_ttft(self, c: Candidate) -> float | None:
        self.priors_read = True
        return self.prior_ttft(c)


# A reason, or a `str.format` pattern and its one argument, or a pattern, its value and the route key: the
# route's own samples ("n samples, newest N s old") are looked up when the text is made, at plan time and
# only for the routes the plan keeps.
Why = str | tuple[str, float] | tuple[str, float, str]
Ordered = list[tuple[Candidate, Why]]  # candidate and the reason of its position
Sampled = Callable[[str], tuple[int, float | None]]

PRIOR_WEIGHT = 1.0  # a published figure counts as this many fresh own samples
SAMPLE_HALF_LIFE = 120.0  # seconds: own samples this old count half against the published prior
FRESH = 30.0  # own samples newer than this are trusted alone (the published prior is not even read)


def why_text(why: Why, now: float | None = None, sampled: Sampled | None = None) -> str:
    if isinstance(why, str):
        return why
    text = why[0].format(why[1])
    if len(why) == 3 and sampled is not None:
        n, at = sampled(why[2])  # type: ignore[misc]
        if at is not None:
            age = max(0.0, (now or at) - at)
            return f"{text} ({n} samples, newest {age:.0f} s old)"
    return text


def blend(own: float, n: int, at: float | None, prior: float | None, now: float) -> float:
    """Own samples against the published prior, weighed by their count and age (SPEC §3.1, issue #18):
    n fresh samples count n, a sample `SAMPLE_HALF_LIFE` old counts half; the prior counts
    `PRIOR_WEIGHT`. Without a prior the own estimate stands whatever its age."""
    if prior is None or at is None:
        return own
    weight = min(n, 10) * 0.5 ** (max(0.0, now - at) / SAMPLE_HALF_LIFE)
    return (own * weight + prior * PRIOR_WEIGHT) / (weight + PRIOR_WEIGHT)


def _stale(inp: StrategyInput, at: float | None) -> bool:
    return at is None or inp.now - at > FRESH


def priority(cands: Sequence[Candidate], inp: StrategyInput) -> Ordered:
    return [(c, "priority order") for c in cands]


def round_robin(cands: Sequence[Candidate], inp: StrategyInput) -> Ordered:
    if not cands:
        return []
    start = inp.cursor(inp.pool_id) % len(cands)
    rotated = list(cands[start:]) + list(cands[:start])
    return [(c, f"round-robin (start {start})") for c in rotated]


def weighted_random(cands: Sequence[Candidate], inp: StrategyInput) -> Ordered:
    # Draw without replacement by weight; zero and equal weights are settled by base order.
    left = list(cands)
    weights = [inp.weights[c.key] for c in left]
    if weights.count(1.0) == len(weights):  # no weights configured
        return _draw_uniform(left, inp.rng)
    weights = [max(w, 0.0) for w in weights]
    out: Ordered = []
    total = sum(weights)
    while left and total > 0:
        pick = inp.rng.random() * total
        # The first route whose running sum exceeds the pick, the last one if rounding leaves none. It never
        # has weight 0: its running sum would equal the one before, which did not exceed the pick.
        i = min(bisect_right(list(accumulate(weights)), pick), len(left) - 1)
        w = weights.pop(i)
        out.append((left.pop(i), ("drawn by weight {:g}", w)))
        total -= w
        if w <= 0:  # float edge: only zero weights were left
            total = 0.0
    out.extend((c, "weight 0: base order") for c in left)
    return out


def _draw_uniform(left: list[Candidate], rng: random.Random) -> Ordered:
    """`weighted_random` when every weight is 1 (none configured): the running sums are the whole numbers
    1, 2, … n, so the first one above the pick is at int(pick) — the same draws without the sums."""
    rand = rng.random
    why = ("drawn by weight {:g}", 1.0)
    # int(pick) < n, unless rounding made the pick n itself: then the last one, as in the general draw.
    return [(left.pop(i if (i := int(rand() * n)) < n else n - 1), why) for n in range(len(left), 0, -1)]


def least_used(cands: Sequence[Candidate], inp: StrategyInput) -> Ordered:
    served = {c.key: inp.measurements.served(c.key) for c in cands}
    ordered = sorted(cands, key=lambda c: served[c.key])
    return [(c, ("served {} calls", served[c.key])) for c in ordered]


def fastest(cands: Sequence[Candidate], inp: StrategyInput) -> Ordered:
    # Measured routes rank by EWMA time-to-first-chunk (with a change detector: two samples at twice or
    # half the EWMA restart it, health/record.py); once the own samples are no longer fresh, a route with
    # published stats (an aggregator's best inner provider) weighs them against its published TTFT by count
    # and age; a route with neither is probed first (its first call is the measurement).
    keyed: list[tuple[tuple[int, float], Candidate, Why]] = []
    m = inp.measurements
    for c in cands:
        ttft = m.ewma_ttft(c.key)
        if ttft is not None:
            n, at = m.sampled(c.key)
            if _stale(inp, at):
                ttft = blend(ttft, n, at, inp.published_ttft(c), inp.now)
            keyed.append(((1, ttft), c, ("EWMA TTFT {:.0f} ms", ttft * 1000, c.key)))
            continue
        prior = inp.published_ttft(c)
        if prior is not None:
            keyed.append(((1, prior), c, ("published TTFT {:.0f} ms", prior * 1000)))
        else:
            keyed.append(((0, 0.0), c, "unmeasured: probe"))
    keyed.sort(key=lambda t: t[0])
    return [(c, why) for _, c, why in keyed]


def cheapest(cands: Sequence[Candidate], inp: StrategyInput) -> Ordered:
    if inp.expected_cost is not None:
        return _cheapest_by_price(cands, inp, inp.expected_cost)
    costs = inp.costs
    ordered = sorted(cands, key=lambda c: (costs[c.key] is None, costs[c.key] or 0.0))
    return [
        (c, ("cost {:g}", cost) if (cost := costs[c.key]) is not None else "no cost hint") for c in ordered
    ]


def _cheapest_by_price(
    cands: Sequence[Candidate], inp: StrategyInput, expected: Callable[[str], tuple[float, Why] | None]
) -> Ordered:
    """Priced routes by the expected cost of this call; then routes with only a cost hint, by the hint;
    then the rest in base order."""
    keyed: list[tuple[tuple[int, float], Candidate, Why]] = []
    for c in cands:
        found = expected(c.key)
        if found is not None:
            keyed.append(((0, found[0]), c, found[1]))
        elif (hint := inp.costs[c.key]) is not None:
            keyed.append(((1, hint), c, ("no price: cost hint {:g}", hint)))
        else:
            keyed.append(((2, 0.0), c, "no price, no cost hint"))
    keyed.sort(key=lambda t: t[0])
    return [(c, why) for _, c, why in keyed]


def throughput(cands: Sequence[Candidate], inp: StrategyInput) -> Ordered:
    m = inp.measurements
    whys: dict[str, Why] = {}

    def tps(c: Candidate) -> float | None:
        measured = m.median_tps(c.key)
        if measured is None:
            prior = inp.published_tps(c)
            if prior:
                whys[c.key] = ("published {:.0f} tok/s", prior)
            return prior
        n, at = m.sampled(c.key)
        if _stale(inp, at):
            measured = blend(measured, n, at, inp.published_tps(c), inp.now)
        whys[c.key] = ("{:.0f} tok/s", measured, c.key)
        return measured

    speeds = {c.key: tps(c) for c in cands}
    ordered = sorted(cands, key=lambda c: (speeds[c.key] is None, -(speeds[c.key] or 0.0)))
    return [(c, whys.get(c.key, "no throughput data")) for c in ordered]


def score(cands: Sequence[Candidate], inp: StrategyInput) -> Ordered:
    """The rotator's score: Laplace success × weight + speed × weight, plus the same-model bonus."""
    w_conn, w_speed = inp.score_weights
    ttft_of = {c.key: inp.measurements.median_ttft(c.key) for c in cands}  # one median per route
    ttfts = [t for t in ttft_of.values() if t is not None]
    best_ttft = min(ttfts) if ttfts else None
    requested = inp.requested.lower()
    values: dict[str, float] = {}
    for c in cands:
        s = w_conn * inp.measurements.laplace(c.key)
        ttft = ttft_of[c.key]
        if ttft is not None and best_ttft is not None:
            s += w_speed * (best_ttft / ttft if ttft > 0 else 1.0)
        elif ttft is None:
            s += w_speed * 0.5  # unknown speed: neutral, neither best nor worst
        if inp.prefer_same_model:
            s += same_model_bonus(c, requested)
        values[c.key] = s
    ordered = sorted(cands, key=lambda c: -values[c.key])
    return [(c, ("score {:.3f}", values[c.key], c.key)) for c in ordered]


def same_model_bonus(c: Candidate, requested: str) -> float:
    """Same model on another channel first, then close relatives (same family prefix)."""
    if c.route.normalized == requested or c.route.model_id.lower() == requested:
        return 0.2
    family = requested.split("-")[0]
    if family and c.route.normalized.startswith(family):
        return 0.1
    return 0.0


# Strategies whose ranking is a function of the candidates, the runtime, the period (cheapest), the requested
# name (score) and — where True — the measurements, so the planner may reuse it while none of them changes.
# round-robin moves a cursor and weighted-random draws: both differ on every call.
MEMOISABLE: dict[str, bool] = {
    "priority": False,
    "cheapest": False,
    "least-used": True,
    "fastest": True,
    "throughput": True,
    "score": True,
}

STRATEGIES: dict[str, Callable[[Sequence[Candidate], StrategyInput], Ordered]] = {
    "priority": priority,
    "round-robin": round_robin,
    "weighted-random": weighted_random,
    "least-used": least_used,
    "fastest": fastest,
    "cheapest": cheapest,
    "throughput": throughput,
    "score": score,
}
