"""The candidate pipeline of SPEC §3.1: which routes may serve a call, and in what order.

Steps here: 1 (eligibility), 4 (base order), 5 (strategy), 8 (cap). Steps 2–3 (capability narrowing,
demotions), 6 (the quota and health gates, `gates.py`), 7 (sticky) and 9 (effort) plug in at the marked
seams. The planner
is pure and synchronous: it reads in-memory state only, never the state backend.

Planning runs on every call, so what does not change from call to call is memoised on the (immutable)
runtime: the base order, and a deterministic strategy's ranking until the measurements change. Of a pool's
routes, only the few the plan keeps (`max_attempts`) become this call's candidates with their reason texts.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence

from modelpool.catalog.model import Pool, Route
from modelpool.health.quota import QuotaBook
from modelpool.pricing.expected import expected_costs, output_estimate
from modelpool.routing.call import Call, Candidate, Notes, Plan
from modelpool.routing.fallback import fallback_candidates
from modelpool.routing.gates import QUOTA_NOTE, health_gate, quota_gate, signer_first
from modelpool.routing.narrowing import demote, narrow_for_images
from modelpool.routing.sticky import PinStore
from modelpool.routing.strategies import (
    FRESH,
    MEMOISABLE,
    STRATEGIES,
    Measurements,
    StrategyInput,
    Why,
    why_text,
)
from modelpool.runtime import Runtime

SPEED = frozenset({"fastest", "throughput", "score"})  # strategies that rank by measured speed
HARD_CEILING = 8  # routes one call may try, whatever the config says (rotator seed)


class Planner:
    def __init__(
        self,
        measurements: Measurements,
        is_resting: Callable[[str, float], bool],
        pins: PinStore | None = None,
        rng: random.Random | None = None,
        prior_tps: Callable[[Candidate], float | None] | None = None,
        prior_ttft: Callable[[Candidate], float | None] | None = None,
        any_resting: Callable[[float], bool] | None = None,
        quota: QuotaBook | None = None,
    ) -> None:
        # SPEC §3.8: what the upstreams announced is left; a route short of it goes behind the others.
        self.quota = quota
        # Published speed of a route (an aggregator's best inner provider), priors for speed strategies.
        self._prior_tps = prior_tps or (lambda c: None)
        self._prior_ttft = prior_ttft or (lambda c: None)
        self._measurements = measurements
        self._is_resting = is_resting
        # Optional shortcut for the health gate: False when no route rests at all (the common case).
        self._any_resting = any_resting
        self.pins = pins or PinStore()
        self._rng = rng or random.Random()
        self._cursors: dict[str, int] = {}  # round-robin: next start per pool
        self._explore_ticks: dict[str, int] = {}  # speed strategies: calls per pool (re-measure cadence)
        # Called with (pool, new cursor) after each step, so a shared backend can make the rotation
        # global across processes (the step itself never waits for it).
        self.on_advance: Callable[[str, int], None] | None = None

    def plan(self, rt: Runtime, call: Call, now: float | None = None) -> Plan:
        now = time.time() if now is None else now
        pool_cfg = rt.config.pool
        if call.forced_route is not None:
            return self._forced(rt, call)
        base, skipped = self._base(rt, call.pool, now)
        eligible = narrow_for_images(call, base, skipped)
        order, whys = self._rank(rt, call, eligible, now, shared=eligible is base)
        notes = Notes()
        translating = self._translating(rt, call, base)
        order = self._explore(rt, call, order, notes, now)
        order = self._sticky(rt, call, self._reorder(call, order, notes, now, translating), notes, now)
        if call.signer is not None:
            order = signer_first(call.signer, order, notes, self._is_resting, now)
        limit = 1 if (not pool_cfg.fallback or call.purpose) else pool_cfg.max_attempts
        if len(order) > limit:
            why = f"beyond max_attempts={limit}" if pool_cfg.fallback else "fallback off"
            skipped += [(c.key, why) for c in order[limit:]]
            order = order[:limit]
        candidates = list(order)
        if pool_cfg.model_fallback != "off" and pool_cfg.fallback and not call.purpose:
            room = HARD_CEILING - len(candidates)
            candidates += fallback_candidates(
                rt.catalog.pools.values(),
                call,
                pool_cfg.model_fallback,
                room,
                lambda pool: [c for c in self._base(rt, pool, now)[0] if not self._is_resting(c.key, now)],
                self._strategy_input(rt, call),
            )
        return Plan(candidates, skipped, pool_cfg.strategy, self._reasons(order, whys, notes, now))

    def _reasons(
        self, order: Sequence[Candidate], whys: Mapping[str, Why], notes: Notes, now: float
    ) -> Callable[[], dict[str, list[str]]]:
        """The reason texts of the routes the plan keeps, made when first read (the session page). The own
        samples a speed reason cites are taken now, as the plan saw them (a cheap read)."""
        sampled = self._measurements.sampled
        seen = {c.key: sampled(c.key) for c in order if len(whys[c.key]) == 3}
        made: list[dict[str, list[str]]] = []

        def texts() -> dict[str, list[str]]:
            if not made:
                made.append(
                    {
                        c.key: [
                            why_text(whys[c.key], now, lambda k: seen.get(k, (0, None))),
                            *notes.get(c.key, ()),
                        ]
                        for c in order
                    }
                )
            return made[0]

        return texts

    def _rank(
        self, rt: Runtime, call: Call, eligible: Sequence[Candidate], now: float, shared: bool
    ) -> tuple[Sequence[Candidate], Mapping[str, Why]]:
        """Step 5 (the base order of step 4 is already applied): the strategy's order, and the reason of
        each candidate's place by route key.

        A memoisable strategy ranks the runtime's shared base candidates the same way until its inputs
        change, so its ranking is kept on the runtime: the calls between two recorded results reuse it
        instead of ranking every route again."""
        strategy = rt.config.pool.strategy
        peak = strategy == "cheapest" and rt.policy().is_peak(now)  # cost hints per period
        # Prices make `cheapest` depend on this call (its size, its pin) and on the price library's own
        # windows: such a ranking is computed per call, never memoised.
        expected = self._expected(rt, call, eligible, now) if strategy == "cheapest" else None
        stamp = self._stamp(strategy, peak, call, now) if shared and expected is None else None
        memo = rt.memo.get(("ranking", call.pool.id))
        if stamp is not None and memo is not None and memo[0] is eligible and memo[1] == stamp:
            return memo[2], memo[3]
        inp = self._strategy_input(rt, call, peak, self._cursor(rt, call, eligible, now), now)
        inp.expected_cost = expected
        ordered = STRATEGIES[strategy](eligible, inp)
        order, whys = tuple([c for c, _ in ordered]), {c.key: why for c, why in ordered}
        if stamp is not None and not inp.priors_read:
            rt.memo[("ranking", call.pool.id)] = (eligible, stamp, order, whys)
        return order, whys

    def _expected(
        self, rt: Runtime, call: Call, eligible: Sequence[Candidate], now: float
    ) -> Callable[[str], tuple[float, Why] | None] | None:
        """`cheapest` by the expected cost of this call when any candidate has a price (SPEC §14)."""
        book = rt.prices()
        if not any(book.pricing(c.key) is not None for c in eligible):
            return None
        pinned = None
        if rt.config.pool.sticky and call.session_id is not None and not call.purpose:
            pin = self.pins.get(call.session_id, call.pool.id, now)
            pinned = pin.route if pin is not None else None
        return expected_costs(book.pricer(now), call.est_tokens, output_estimate(call.body), pinned)

    def _stamp(self, strategy: str, peak: bool, call: Call, now: float) -> tuple[int, bool, str, int] | None:
        """What a memoisable strategy's ranking depends on besides the runtime and the candidates: the
        measurements (if it reads them), the period and the requested name. None: not memoisable."""
        reads_measurements = MEMOISABLE.get(strategy)
        if reads_measurements is None:
            return None
        # The speed rankings also weigh samples by age (published priors once own samples are not fresh):
        # a ranking is reused for at most `FRESH` seconds.
        epoch = int(now // FRESH) if reads_measurements else 0
        return (self._measurements.version() if reads_measurements else 0, peak, call.requested_model, epoch)

    def _explore(
        self, rt: Runtime, call: Call, order: Sequence[Candidate], notes: Notes, now: float
    ) -> Sequence[Candidate]:
        """A route left behind by a speed strategy gets no traffic, so its estimate never learns that it
        recovered: every 1/`speed.explore`-th call of the pool puts first the route whose newest own sample
        is the oldest (once older than `speed.explore_after`). A pinned session keeps its pin (step 7)."""
        speed = rt.config.pool.speed
        if speed.explore <= 0 or call.purpose or len(order) < 2 or rt.config.pool.strategy not in SPEED:
            return order
        pool = call.pool.id
        tick = self._explore_ticks[pool] = self._explore_ticks.get(pool, 0) + 1
        if tick % max(1, round(1 / speed.explore)):
            return order
        m = self._measurements
        # First a route whose newest sample disagreed with its estimate (one more sample confirms a change
        # — e.g. a recovery — or dismisses it), else the one whose newest sample is the oldest.
        # A route never measured (a strategy that does not probe, e.g. `throughput`) counts as the oldest.
        best: tuple[float, int] | None = None
        for i, c in enumerate(order[1:], 1):
            at = m.sampled(c.key)[1]
            if at is not None and m.unsettled(c.key):
                best = (-2.0, i)
                break
            if at is None:
                at = -1.0
            if now - at > speed.explore_after and (best is None or at < best[0]):
                best = (at, i)
        if best is None:
            return order
        at, i = best
        c = order[i]
        why = {-2.0: "its newest sample disagreed", -1.0: "never measured"}.get(at)
        why = why or f"newest sample {now - at:.0f} s old"
        notes.add(c.key, f"re-measure: {why} (explore {speed.explore:.0%})")
        return [c, *order[:i], *order[i + 1 :]]

    @staticmethod
    def _translating(rt: Runtime, call: Call, base: Sequence[Candidate]) -> bool:
        """Whether some route of the pool does not speak the call's dialect (SPEC §3.1 step 3: only then
        is any route asked what translation would lose). Memoised per runtime: one lookup per call."""
        key = ("translating", call.pool.id, call.ingress)
        memo = rt.memo.get(key)
        if memo is None or memo[0] is not base:
            memo = rt.memo[key] = (base, any(not c.endpoint.speaks(call.ingress) for c in base))
        return memo[1]  # type: ignore[no-any-return]

    def _reorder(
        self, call: Call, order: Sequence[Candidate], notes: Notes, now: float, translating: bool = False
    ) -> Sequence[Candidate]:
        """After the strategy: operator pin head, demotions, health gate."""
        head = self.pins.operator(call.pool.id)
        if head is not None:
            for i, c in enumerate(order):
                if c.key == head:
                    # The operator's pin heads the order whatever the strategy says; the ranking decides
                    # the tail.
                    notes.add(c.key, "pinned head (modelpool pin)")
                    order = [c, *order[:i], *order[i + 1 :]]
                    break
        # Demotions are applied after the strategy so no strategy can pull a demoted route forward.
        order = quota_gate(self.quota, call, demote(call, order, notes, translating), notes, now)
        return health_gate(order, notes, self._is_resting, self._any_resting, now)

    def _sticky(
        self, rt: Runtime, call: Call, cands: Sequence[Candidate], notes: Notes, now: float
    ) -> Sequence[Candidate]:
        """Step 7: the session's pinned route goes first while it is a healthy candidate."""
        if not rt.config.pool.sticky or call.session_id is None or call.purpose:
            return cands
        pin = self.pins.get(call.session_id, call.pool.id, now)
        if pin is None:
            return cands
        for i, c in enumerate(cands):
            if c.key != pin.route:
                continue
            if self._is_resting(c.key, now):
                self.pins.drop(call.session_id, call.pool.id)  # unhealthy: the strategy decides again
                notes.add(c.key, "sticky pin dropped: route resting")
                return cands
            if c.key in notes and any(n.startswith(QUOTA_NOTE) for n in notes[c.key]):
                # Short of quota for this call (step 3's demotion): the pin moves like after a demotion.
                self.pins.drop(call.session_id, call.pool.id)
                notes.add(c.key, "sticky pin moved: quota low")
                return cands
            notes.add(c.key, "sticky: this conversation's route")
            return [c, *cands[:i], *cands[i + 1 :]]
        return cands

    def _cursor(
        self, rt: Runtime, call: Call, eligible: Sequence[Candidate], now: float
    ) -> Callable[[str], int]:
        """Round-robin's cursor for this call. A call its sticky pin will serve does not use the strategy's
        pick, so it must not move the cursor: the rotation spreads conversations, and the next one starts
        on the next route. Whether the pin holds is only asked when the strategy reads the cursor."""

        def cursor(pool_id: str) -> int:
            if self._pin_holds(rt, call, eligible, now):
                return self._peek_cursor(pool_id)
            return self._next_cursor(pool_id)

        return cursor

    def _pin_holds(self, rt: Runtime, call: Call, eligible: Sequence[Candidate], now: float) -> bool:
        """Whether step 7 will put the session's pinned route first (same conditions as `_sticky`)."""
        if not rt.config.pool.sticky or call.session_id is None or call.purpose:
            return False
        pin = self.pins.get(call.session_id, call.pool.id, now)
        if pin is None or self._is_resting(pin.route, now):
            return False
        return any(c.key == pin.route for c in eligible)

    def _forced(self, rt: Runtime, call: Call) -> Plan:
        route = rt.catalog.routes[call.forced_route]  # type: ignore[index]
        cand = Candidate(
            route,
            rt.endpoints[route.provider_id],
            ["forced by x-modelpool-route"],
            rt.route_timeouts()[route.key],
        )
        return Plan([cand], [], "forced")

    def _eligible(
        self, rt: Runtime, routes: Sequence[Route]
    ) -> tuple[list[Candidate], list[tuple[str, str]]]:
        eligible: list[Candidate] = []
        skipped: list[tuple[str, str]] = []
        timeouts = rt.route_timeouts()
        for route in routes:
            ok, why = rt.catalog.route_status(route)
            endpoint = rt.endpoints.get(route.provider_id)
            if not ok or endpoint is None:
                skipped.append((route.key, why or "provider unavailable"))
                continue
            eligible.append(Candidate(route, endpoint, timeouts=timeouts[route.key]))
        return eligible, skipped

    def _base(
        self, rt: Runtime, pool: Pool, now: float
    ) -> tuple[tuple[Candidate, ...], list[tuple[str, str]]]:
        """Steps 1 and 4. Both depend only on the config snapshot and the order in force (which the period
        may switch), so the work is memoised on the (immutable) runtime per order. The candidates are
        shared by every call and must never change: a call's own reasons go to copies (`with_reasons`),
        made only for the routes its plan keeps."""
        order, source = rt.provider_order(now)
        memo_key = (pool.id, tuple(order), source)
        cached = rt.memo.get(memo_key)
        if cached is None:
            eligible, ineligible = self._eligible(rt, pool.routes)
            cached = (tuple(self._base_order(order, source, eligible)), tuple(ineligible))
            rt.memo[memo_key] = cached
        base, skipped = cached
        return base, list(skipped)

    @staticmethod
    def _base_order(order: list[str], source: str, cands: list[Candidate]) -> list[Candidate]:
        """Partial lists are valid: listed providers first, the rest in registration order."""
        rank = {pid: i for i, pid in enumerate(order)}
        unlisted = len(order)
        ordered = sorted(cands, key=lambda c: (rank.get(c.route.provider_id, unlisted), c.route.registration))
        for c in ordered:
            pos = rank.get(c.route.provider_id)
            c.reasons.append(f"{source} #{pos + 1}" if pos is not None else "unlisted: registration order")
        return ordered

    def _strategy_input(
        self,
        rt: Runtime,
        call: Call,
        peak: bool = False,
        cursor: Callable[[str], int] | None = None,
        now: float = 0.0,
    ) -> StrategyInput:
        pool_cfg = rt.config.pool
        return StrategyInput(
            measurements=self._measurements,
            weights=rt.route_weights(),
            costs=rt.route_costs(peak),
            prior_tps=self._prior_tps,
            prior_ttft=self._prior_ttft,
            cursor=cursor or self._next_cursor,
            pool_id=call.pool.id,
            requested=call.requested_model,
            score_weights=(pool_cfg.score_weights.connectivity, pool_cfg.score_weights.speed),
            prefer_same_model=pool_cfg.prefer_same_model,
            rng=self._rng,
            now=now,
        )

    def _next_cursor(self, pool_id: str) -> int:
        value = self._cursors.get(pool_id, 0)
        self._cursors[pool_id] = value + 1
        if self.on_advance is not None:
            self.on_advance(pool_id, value + 1)
        return value

    def set_cursor(self, pool_id: str, value: int) -> None:
        """The shared cursor as another process advanced it; a cursor never moves back."""
        if value > self._cursors.get(pool_id, 0):
            self._cursors[pool_id] = value

    def _peek_cursor(self, pool_id: str) -> int:
        return self._cursors.get(pool_id, 0)
