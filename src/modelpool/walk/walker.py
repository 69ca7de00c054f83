"""The walk (SPEC §3.2): attempts over the plan's candidates, retries, switches, and the verdict.

The walker owns the *policy* — when to retry the same route, when to switch, what the health registry
learns — and delegates one attempt to a relay (`attempt(candidate)`) that knows the wire format. A relay
raises `AttemptFailure` before the commit point (the walk may go on) and `Committed` after it (the walk
must end: content was shown, a retry would duplicate it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from modelpool.config.schema import PoolConfig
from modelpool.health.classify import FailureKind, retryable
from modelpool.protocols.errors import AttemptRecord, WalkFailed
from modelpool.routing.call import Call, Candidate, Plan
from modelpool.upstream.client import AttemptFailure

USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "cached_tokens", "cache_creation_tokens")
MAX_RETRY_WAIT = 10.0  # SPEC §1.5: the nth retry waits n×retry_backoff, capped at 10 s


class CommittedFailure(Exception):
    """A failure after the commit point: the client already got content; the walk ends here."""

    def __init__(self, failure: AttemptFailure) -> None:
        super().__init__(failure.message)
        self.failure = failure


@dataclass(slots=True)
class AttemptResult:
    ttft: float | None = None
    tokens_per_s: float | None = None


@dataclass(slots=True)
class WalkState:
    """Shared between the walker and the relay; the relay reads it to build headers and metadata."""

    pool: str
    attempts: list[AttemptRecord] = field(default_factory=list)
    current: Candidate | None = None
    switched_from: str | None = None
    switch_kind: str | None = None
    effort: str | None = None
    notice_inline: bool = False  # `pool.notice: inline` (never for purpose calls)
    locale: str = "en"
    notice_sent: bool = False
    dropped: list[str] = field(default_factory=list)  # what translation could not carry (SPEC §1.6)
    # SPEC §14: prices in force at the call's start, by route key; the usage every attempt reported and
    # what it cost (None: no priced usage).
    pricer: Callable[[str], Any] | None = None
    usage: dict[str, int] | None = None
    cost: float | None = None
    estimated: bool = False  # no attempt reported usage: `usage` is an estimate from the text (§14)

    def add_usage(self, route_key: str | None, usage: Mapping[str, int] | None) -> None:
        """One attempt's normalized usage (protocols.mapping); relays call it once per attempt."""
        if not usage:
            return
        totals = self.usage
        if totals is None:
            totals = self.usage = dict.fromkeys(USAGE_FIELDS, 0)
        for name in USAGE_FIELDS:
            totals[name] += usage.get(name) or 0
        key = route_key or (self.current.key if self.current is not None else None)
        price = self.pricer(key) if self.pricer is not None and key is not None else None
        if price is not None:
            self.cost = (self.cost or 0.0) + price.cost(usage)

    def estimate(self, route_key: str, input_tokens: int, output_tokens: int) -> None:
        """A served call whose upstream reported no usage at all (SPEC §14): tokens estimated from the
        text, priced like reported ones, and marked `estimated` in the books."""
        usage = dict.fromkeys(USAGE_FIELDS, 0)
        usage["prompt_tokens"], usage["completion_tokens"] = input_tokens, output_tokens
        self.add_usage(route_key, usage)
        self.estimated = True

    hedged: str | None = None  # SPEC §3.7: "<loser> → <winner>" once a hedge race was decided
    hedge_outcome: str | None = None  # won_by_first | won_by_hedge | budget_refused (the metric's label)
    hedge_started: bool = False

    @property
    def attempt_count(self) -> int:
        return len(self.attempts) + 1 + (1 if self.hedged else 0)

    def metadata(self) -> dict[str, object]:
        meta: dict[str, object] = {
            "route": self.current.key if self.current else None,
            "attempts": self.attempt_count,
            "switched_from": self.switched_from,
            "effort": self.effort,
            **({"cost": round(self.cost, 10)} if self.cost is not None else {}),
        }
        if self.dropped:
            meta["dropped"] = list(self.dropped)
        if self.hedged:
            meta["hedged"] = self.hedged
        return meta

    def notice(self) -> str | None:
        """The one-line switch notice to put before the answer text, once (SPEC §3.5)."""
        if not self.notice_inline or self.notice_sent or self.switched_from is None or self.current is None:
            return None
        self.notice_sent = True
        pair = f"{self.switched_from} → {self.current.key} ({self.switch_kind})"
        return f"模型已切换：{pair}\n\n" if self.locale.startswith("zh") else f"Model switched: {pair}\n\n"

    def headers(self) -> list[tuple[bytes, bytes]]:
        out = [
            (b"x-modelpool-pool", self.pool.encode()),
            (b"x-modelpool-attempts", str(self.attempt_count).encode()),
        ]
        if self.current is not None:
            out.append((b"x-modelpool-route", self.current.key.encode()))
        if self.effort:
            out.append((b"x-modelpool-effort", self.effort.encode()))
        if self.switched_from and self.current is not None:
            switched = f"{self.switched_from} → {self.current.key} ({self.switch_kind})"
            out.append((b"x-modelpool-switched", switched.encode()))
        if self.dropped:
            out.append((b"x-modelpool-dropped", ", ".join(self.dropped).encode()))
        if self.cost is not None:  # known only once the answer is whole: non-streamed answers
            out.append((b"x-modelpool-cost", f"{self.cost:.10f}".rstrip("0").rstrip(".").encode() or b"0"))
        if self.hedged:
            out.append((b"x-modelpool-hedged", self.hedged.encode()))
        return out


class HealthSink(Protocol):
    """What the walker tells the health registry (a protocol so tests can observe it)."""

    def success(self, route_key: str, result: AttemptResult) -> None: ...
    def failure(self, route_key: str, failure: AttemptFailure) -> None: ...
    def is_resting(self, route_key: str) -> bool: ...


Attempt = Callable[[Candidate], Awaitable[AttemptResult]]
# Asked before the first switch of a walk: (from route, to route, failure kind) → proceed?
Consent = Callable[[str, str, AttemptFailure], Awaitable[bool]]


class Walker:
    def __init__(
        self,
        call: Call,
        plan: Plan,
        pool_cfg: PoolConfig,
        health: HealthSink,
        on_switch: Callable[[str, str, str], None] | None = None,
        consent: Consent | None = None,
    ) -> None:
        self.call = call
        self.plan = plan
        self.cfg = pool_cfg
        self.health = health
        self.state = WalkState(
            pool=call.pool.id,
            effort=call.effort,
            notice_inline=pool_cfg.notice == "inline" and not call.purpose,
            locale=call.locale,
        )
        self._on_switch = on_switch
        self._consent = consent
        self.served: Candidate | None = None
        self.pending: list[Candidate] = []
        self.declined: str | None = None  # the route a consent question refused to switch to

    async def run(self, attempt: Attempt) -> Candidate:
        """Walk the candidates until one attempt succeeds; raise `WalkFailed` when none did."""
        no_failover = bool(self.call.purpose) or self.call.forced_route is not None
        last: AttemptFailure | None = None
        pending = self.pending = list(self.plan.candidates)  # a hedge takes its rival from here
        while pending:
            cand = pending.pop(0)
            if last is not None and self._rested_since_plan(cand, pending):
                pending.append(cand)
                continue
            if last is not None:
                if not await self._may_switch(cand, last):
                    # The user kept the current model: the call ends with the original error.
                    self.declined = cand.key
                    break
                self._switching(cand, last)
            last = await self._try_route(
                cand, attempt, retries=0 if no_failover else self.cfg.retries_per_route
            )
            if last is None:
                self.served = self.state.current or cand  # a hedge's winner may be another candidate
                return self.served
            if no_failover:
                break
        raise self._failed()

    def _rested_since_plan(self, cand: Candidate, pending: list[Candidate]) -> bool:
        """The health gate again at switch time (SPEC §3.1 step 6): a route that began to rest while this
        walk was under way — another call hit its quota wall — goes behind the routes still healthy."""
        if not self.health.is_resting(cand.key):
            return False
        return any(not self.health.is_resting(c.key) for c in pending)

    async def _try_route(self, cand: Candidate, attempt: Attempt, retries: int) -> AttemptFailure | None:
        """Attempts on one route: retries while the failure is retryable; None when one succeeded."""
        self.state.current = cand
        tries = 0
        while True:
            try:
                result = await attempt(cand)
            except CommittedFailure as exc:
                self._note_failure(cand, exc.failure, tries > 0, believed=True)
                raise
            except AttemptFailure as failure:
                wait = self._retry_wait(failure, tries, retries)
                self._note_failure(cand, failure, tries > 0, believed=wait is None)
                if wait is None:
                    return failure
                tries += 1
                if wait > 0:
                    await asyncio.sleep(wait)
                continue
            self.health.success(cand.key, result)
            return None

    def _note_failure(self, cand: Candidate, failure: AttemptFailure, retry: bool, believed: bool) -> None:
        # Upstream error texts may echo a credential: redact before anything stores or shows it.
        failure.message = cand.endpoint.redact(failure.message)
        self.state.attempts.append(self._record(cand, failure, retry))
        # A miss that will be retried is not believed yet (rotator seed): health only learns of a failure
        # when the walk gives up on the route. `request`/`cancelled` are never the route's fault.
        if believed and failure.kind not in (FailureKind.REQUEST, FailureKind.CANCELLED):
            self.health.failure(cand.key, failure)

    def _retry_wait(self, failure: AttemptFailure, tries: int, retries: int) -> float | None:
        """Seconds to wait before retrying the same route, or None to move on (SPEC §3.2, §5)."""
        if tries >= retries or not retryable(failure.kind):
            return None
        wait = min(self.cfg.retry_backoff * (tries + 1), MAX_RETRY_WAIT)
        if failure.retry_after is not None:
            if failure.retry_after > MAX_RETRY_WAIT:
                return None  # too long to hold the caller: switch; the route rests until then
            wait = max(wait, failure.retry_after)
        return wait

    async def _may_switch(self, cand: Candidate, last: AttemptFailure) -> bool:
        """The consent gate asks once per walk, before the first switch (SPEC §3.5)."""
        if self._consent is None or self.state.switched_from is not None:
            return True
        prev = self.state.current.key if self.state.current else "?"
        return await self._consent(prev, cand.key, last)

    def _switching(self, cand: Candidate, last: AttemptFailure) -> None:
        prev = self.state.current.key if self.state.current else "?"
        if self.state.switched_from is None:
            self.state.switched_from = prev
        self.state.switch_kind = last.kind.value
        if self._on_switch is not None:
            self._on_switch(prev, cand.key, last.kind.value)

    @staticmethod
    def _record(cand: Candidate, failure: AttemptFailure, retry: bool) -> AttemptRecord:
        return AttemptRecord(
            route=cand.key,
            kind=failure.kind.value,
            status=failure.status,
            message=failure.message,
            retry=retry,
        )

    def _failed(self) -> WalkFailed:
        attempts = self.state.attempts
        err = WalkFailed(pool=self.call.pool.id, attempts=list(attempts))
        kinds = {a.kind for a in attempts}
        if attempts and kinds == {FailureKind.REQUEST.value}:
            err.status = attempts[0].status or 400  # the request itself is at fault
        elif kinds and kinds <= {FailureKind.RATE_LIMIT.value, FailureKind.QUOTA.value}:
            err.status = 429
        elif not attempts:
            err.status = 503
        if self.declined is not None and attempts:
            last = attempts[-1]
            err.message_override = (
                f"pool {self.call.pool.id!r}: {last.route} failed ({last.kind}: {last.message[:200]}); "
                f"the switch to {self.declined} was declined"
            )
        return err
