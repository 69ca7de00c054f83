"""One client call's trace: its request id, its timings and what the walk did.

The metrics and the call's log line are both made from it when the call ends. It lives on the hot path,
so it is a slotted object filled with a few `time.monotonic()` reads: nothing per chunk, no allocation
beyond the trace itself and one wrapper coroutine per upstream attempt.

Timings (all from the moment the handler got the request, `t0`):
- `ttft`: to the first reasoning/answer event of the serving attempt (streams only).
- `total`: to the response's last byte handed to the server.
- `overhead`: the gateway's own time outside upstream attempts — `t0` → the first attempt starts (read the
  body, parse, resolve the pool, plan) plus the serving attempt's end → the last byte (final body,
  bookkeeping, send). It leaves out retry waits, the upstream's time and the per-chunk relay work that is
  interleaved with upstream reads (bench/ measures that part against a direct baseline).
"""

from __future__ import annotations

import itertools
import os
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from modelpool.protocols.errors import AttemptRecord
from modelpool.routing.call import Call, Candidate

# A client's id is echoed in a response header and a log line: bounded and plain, or replaced.
_RID_OK = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/+=@-]{0,127}")


class _Ids:
    """Generated request ids: a random per-process prefix and a counter (a uuid4 per call costs more)."""

    def __init__(self) -> None:
        self.reseed()

    def reseed(self) -> None:
        self.prefix = os.urandom(6).hex()
        self.counter = itertools.count(1)

    def next(self) -> str:
        return f"{self.prefix}-{next(self.counter):x}"


_IDS = _Ids()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_IDS.reseed)  # forked workers must not repeat the parent's ids


def request_id(headers: Mapping[str, str]) -> str:
    given = headers.get("x-request-id")
    if given and _RID_OK.fullmatch(given):
        return given
    return _IDS.next()


AttemptFn = Callable[[Candidate], Awaitable[Any]]


class CallTrace:
    __slots__ = (
        "attempt_at",
        "attempts",
        "call",
        "ingress",
        "key",
        "otel",
        "outcome",
        "relay",
        "request_id",
        "result",
        "served",
        "status",
        "t0",
        "t_end",
        "ticket",
        "up_end",
        "up_start",
        "walker",
    )

    def __init__(self, ingress: str, headers: Mapping[str, str]) -> None:
        self.t0 = time.monotonic()
        self.ingress = ingress
        self.request_id = request_id(headers)
        self.call: Call | None = None
        self.walker: Any = None
        self.relay: Any = None
        self.status = 200
        self.outcome = "ok"  # ok | rejected | failed | cut | cancelled
        self.up_start: float | None = None  # the first upstream attempt began
        self.up_end: float | None = None  # the last one ended
        self.attempt_at: float | None = None  # the last one began
        self.result: Any = None  # the serving attempt's AttemptResult
        self.t_end = 0.0
        self.served: str | None = None
        self.attempts: list[AttemptRecord] = []
        self.key = "-"  # the client key's name or short hash (SPEC §14); "-" when keys are off
        self.ticket: Any = None  # what admission reserved for a key with limits
        self.otel: Any = None  # the call's OpenTelemetry spans (`observe.otel.CallSpans`) when tracing

    @property
    def header(self) -> tuple[bytes, bytes]:
        return (b"x-request-id", self.request_id.encode())

    def timed(self, attempt: AttemptFn, in_flight: dict[str, int]) -> AttemptFn:
        """Wrap a relay's `attempt` to time it and count it in flight on its route."""

        async def run(cand: Candidate) -> Any:
            now = time.monotonic()
            if self.up_start is None:
                self.up_start = now
            self.attempt_at = now
            key = cand.key
            in_flight[key] = in_flight.get(key, 0) + 1
            if self.otel is not None:
                return await self._traced(attempt, cand, in_flight)
            try:
                result = await attempt(cand)
            finally:
                in_flight[key] -= 1
                self.up_end = time.monotonic()
            # The serving attempt's own start: with a hedge (SPEC §3.7) the last attempt to begin may be
            # the loser, and the TTFT is counted from the winner's start.
            self.result, self.attempt_at = result, now
            return result

        return run

    async def _traced(self, attempt: AttemptFn, cand: Candidate, in_flight: dict[str, int]) -> Any:
        """`timed` with an attempt span around it (tracing on): its context goes upstream."""
        span = self.otel.attempt_started(cand, self.call)
        error: BaseException | None = None
        try:
            result = await attempt(cand)
        except BaseException as exc:
            error = exc
            raise
        finally:
            in_flight[cand.key] -= 1
            self.up_end = time.monotonic()
            self.otel.attempt_ended(span, error)
        self.result = result
        return result

    def end(self) -> None:
        self.t_end = time.monotonic()
        walker = self.walker
        if walker is not None:
            self.attempts = walker.state.attempts
            if walker.served is not None and self.outcome == "ok":
                self.served = walker.served.key

    @property
    def total(self) -> float:
        return self.t_end - self.t0

    @property
    def ttft(self) -> float | None:
        """Client-side time to the first meaningful event: only for a served stream."""
        result = self.result
        if self.served is None or self.call is None or not self.call.stream or self.attempt_at is None:
            return None
        if result is None or result.ttft is None:
            return None
        return float(self.attempt_at + result.ttft - self.t0)

    @property
    def overhead(self) -> float | None:
        if self.served is None or self.up_start is None or self.up_end is None:
            return None
        return (self.up_start - self.t0) + (self.t_end - self.up_end)


def switches(attempts: list[AttemptRecord], served: str | None) -> list[tuple[str, str, str]]:
    """(from, to, kind) of every switch of a walk, read off its attempt records: the walker switches
    exactly when it leaves a route after its last failure there for the next route it tries."""
    out: list[tuple[str, str, str]] = []
    for i, rec in enumerate(attempts):
        nxt = attempts[i + 1].route if i + 1 < len(attempts) else served
        if nxt is not None and nxt != rec.route:
            out.append((rec.route, nxt, rec.kind or "unclassified"))
    return out


def call_usage(trace: CallTrace) -> dict[str, int] | None:
    """The call's usage as the books count it (SPEC §14): every attempt that reported any (a hedge loser
    included), normalized — `prompt_tokens` is all input, cache reads (`cached_tokens`) and cache writes
    (`cache_creation_tokens`) included — or the estimate when none did (`WalkState.estimated`)."""
    walker = trace.walker
    usage = getattr(walker.state, "usage", None) if walker is not None else None
    return usage if isinstance(usage, dict) else None


def usage_tokens(trace: CallTrace) -> tuple[int | None, int | None]:
    """(input, output) tokens of the call, input including cached tokens; (None, None) without usage."""
    usage = call_usage(trace)
    if usage is None:
        return None, None
    return usage["prompt_tokens"], usage["completion_tokens"]
