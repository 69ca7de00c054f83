"""The per-route health record and its two views: a `RouteHealth` snapshot and a persistable dict.

Kept apart from the registry so the record's shape — what persists and what stays in memory — is
readable in one place.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import asdict, dataclass
from enum import StrEnum
from statistics import median
from typing import Any

from modelpool.health.classify import FailureKind

WINDOW = 20  # latency samples kept per route (rotator seed: a 20-sample sliding window)
EWMA_ALPHA = 0.3
MAX_ERROR_CHARS = 1000  # stored error text: enough to re-classify, small enough to persist often
RECORD_VERSION = 1
_KINDS = frozenset(k.value for k in FailureKind)


class RouteState(StrEnum):
    OK = "ok"  # last attempt succeeded
    DEGRADED = "degraded"  # last attempt failed, rest over
    UNAVAILABLE = "unavailable"  # inside a rest
    UNKNOWN = "unknown"  # never used


@dataclass(frozen=True, slots=True)
class RouteHealth:
    """A point-in-time view of one route, for ranking, status, dashboard and metrics."""

    route_key: str
    state: RouteState
    attempts: int
    successes: int
    failures: int
    consecutive_failures: int
    last_error: str | None
    last_error_kind: FailureKind | None
    last_status: int | None
    last_error_at: float | None
    rest_until: float
    rest_remaining: float
    last_success_at: float | None
    updated_at: float | None
    ewma_ttft: float | None
    median_ttft: float | None
    median_tps: float | None
    samples: int
    success_rate_laplace: float

    @property
    def quota_rest(self) -> bool:
        """Resting on a quota wall (shown as "quota exhausted" rather than "cooling")."""
        return self.state is RouteState.UNAVAILABLE and self.last_error_kind is FailureKind.QUOTA

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class RouteRecord:
    """Mutable per-route record. Slots keep thousands of routes cheap."""

    __slots__ = (
        "attempts",
        "consecutive",
        "ewma_ttft",
        "failures",
        "last_error",
        "last_error_at",
        "last_kind",
        "last_status",
        "last_success_at",
        "medians",
        "rest_until",
        "sampled_at",
        "shift_tps",
        "shift_ttft",
        "successes",
        "tps",
        "ttft",
        "updated_at",
    )

    def __init__(self) -> None:
        self.attempts = 0
        self.successes = 0
        self.failures = 0
        self.consecutive = 0
        self.last_error: str | None = None
        self.last_kind: FailureKind | None = None
        self.last_status: int | None = None
        self.last_error_at: float | None = None
        self.rest_until = 0.0
        self.last_success_at: float | None = None
        self.updated_at: float | None = None
        self.ttft: deque[float] = deque(maxlen=WINDOW)
        self.tps: deque[float] = deque(maxlen=WINDOW)
        self.ewma_ttft: float | None = None
        self.sampled_at: float | None = None  # newest latency sample (clock time): the estimates' age
        # Consecutive samples far from the current estimate (a change detector, `add_ttft` / `add_tps`).
        self.shift_ttft = 0
        self.shift_tps = 0
        # (TTFT, tok/s) medians of the windows, memoised by the planner's measurements until the next
        # sample (None: to compute): the speed strategies read one per route per call.
        self.medians: tuple[float | None, float | None] | None = None

    def state(self, now: float) -> RouteState:
        if self.rest_until > now:
            return RouteState.UNAVAILABLE
        if self.consecutive > 0:
            return RouteState.DEGRADED
        if self.attempts > 0 or self.last_success_at is not None:
            return RouteState.OK
        return RouteState.UNKNOWN

    def persistable(self) -> dict[str, Any]:
        """The persistable part: counters, last error and kind, rest horizon — never latency."""
        return {
            "v": RECORD_VERSION,
            "attempts": self.attempts,
            "successes": self.successes,
            "failures": self.failures,
            "consecutive_failures": self.consecutive,
            "last_error": self.last_error,
            "last_error_kind": self.last_kind.value if self.last_kind else None,
            "last_status": self.last_status,
            "last_error_at": self.last_error_at,
            "rest_until": self.rest_until,
            "last_success_at": self.last_success_at,
            "updated_at": self.updated_at,
        }


SHIFT_FACTOR = 2.0  # a sample at least 2× (or at most ½×) the estimate is "far"
SHIFT_RUN = 2  # that many far samples in a row: the route changed speed, the old window is forgotten


def _median(values: deque[float]) -> float:
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def window_medians(route: RouteRecord) -> tuple[float | None, float | None]:
    """The (TTFT, tok/s) window medians, memoised on the record until the next sample: the planner's
    speed strategies and the change detector read the same memo."""
    if route.medians is None:
        route.medians = (
            _median(route.ttft) if route.ttft else None,
            _median(route.tps) if route.tps else None,
        )
    return route.medians


def add_ttft(route: RouteRecord, ttft: float, at: float, detect: bool = True) -> None:
    """A time-to-first-event sample: into the window and the EWMA. When the route's speed changed — two
    samples in a row at least twice (or one at most half) the window's median — the window restarts from
    those samples, so every estimate (EWMA, median, pNN) reflects the new speed after two calls, not ten.
    `detect=False` for censored samples (a hedge's loser): a lower bound is no proof of a new speed."""
    prev = route.ewma_ttft
    # The reference is the window's median, not the EWMA: one stall inflates the EWMA, and the next normal
    # sample would then look like a recovery; the median ignores a single outlier.
    ref = window_medians(route)[0] if detect and len(route.ttft) >= SHIFT_RUN else None
    route.ttft.append(ttft)
    route.sampled_at = at
    route.medians = None
    better = ref is not None and ttft * SHIFT_FACTOR <= ref
    if ref is not None and (ttft >= SHIFT_FACTOR * ref or better):
        route.shift_ttft += 1
    else:
        route.shift_ttft = 0
    # Asymmetric on purpose: a route that looks better at once is tried at once and its own traffic
    # corrects a lucky sample within two calls; a route that looks worse gets no traffic, so waiting for a
    # confirmation there would cost far more (a route left behind is only re-measured by exploration).
    if route.shift_ttft >= SHIFT_RUN or better:
        recent = list(route.ttft)[-(1 if better and route.shift_ttft < SHIFT_RUN else SHIFT_RUN) :]
        route.ttft.clear()
        route.ttft.extend(recent)
        route.ewma_ttft = sum(recent) / len(recent)
        route.shift_ttft = 0
        return
    route.ewma_ttft = ttft if prev is None else EWMA_ALPHA * ttft + (1 - EWMA_ALPHA) * prev


def add_tps(route: RouteRecord, tps: float, at: float) -> None:
    """A throughput sample, with the same change detector against the window's median."""
    ref = window_medians(route)[1] if len(route.tps) >= SHIFT_RUN else None
    route.sampled_at = at
    route.medians = None
    route.tps.append(tps)
    better = ref is not None and tps >= SHIFT_FACTOR * ref
    if ref is not None and (better or tps * SHIFT_FACTOR <= ref):
        route.shift_tps += 1
    else:
        route.shift_tps = 0
    if route.shift_tps >= SHIFT_RUN or better:  # asymmetric, as for the TTFT (`add_ttft`)
        recent = list(route.tps)[-(1 if better and route.shift_tps < SHIFT_RUN else SHIFT_RUN) :]
        route.tps.clear()
        route.tps.extend(recent)
        route.shift_tps = 0


def is_sample(value: float) -> bool:
    # NaN/inf/negative timings come from clock glitches or aborted streams; they would poison medians.
    return math.isfinite(value) and value >= 0


def health_of(key: str, route: RouteRecord, now: float) -> RouteHealth:
    """Snapshot of one record at `now`; the medians are over at most WINDOW samples, so still cheap."""
    n, s = route.attempts, route.successes
    return RouteHealth(
        route_key=key,
        state=route.state(now),
        attempts=n,
        successes=s,
        failures=route.failures,
        consecutive_failures=route.consecutive,
        last_error=route.last_error,
        last_error_kind=route.last_kind,
        last_status=route.last_status,
        last_error_at=route.last_error_at,
        rest_until=route.rest_until,
        rest_remaining=max(0.0, route.rest_until - now),
        last_success_at=route.last_success_at,
        updated_at=route.updated_at,
        ewma_ttft=route.ewma_ttft,
        median_ttft=median(route.ttft) if route.ttft else None,
        median_tps=median(route.tps) if route.tps else None,
        samples=len(route.ttft),
        success_rate_laplace=(s + 1) / (n + 2),
    )


def from_record(raw: dict[str, Any]) -> RouteRecord:
    """Parse a persisted record; raises ValueError/TypeError on a malformed one (the caller skips it)."""
    route = RouteRecord()
    route.attempts = _count(raw.get("attempts"))
    route.successes = _count(raw.get("successes"))
    route.failures = _count(raw.get("failures"))
    route.consecutive = _count(raw.get("consecutive_failures"))
    if route.successes > route.attempts or route.failures > route.attempts:
        raise ValueError("counters exceed attempts")
    error = raw.get("last_error")
    route.last_error = error[:MAX_ERROR_CHARS] if isinstance(error, str) and error else None
    kind = raw.get("last_error_kind")
    route.last_kind = FailureKind(kind) if isinstance(kind, str) and kind in _KINDS else None
    status = raw.get("last_status")
    route.last_status = status if isinstance(status, int) and not isinstance(status, bool) else None
    route.last_error_at = _time(raw.get("last_error_at"))
    route.rest_until = _time(raw.get("rest_until")) or 0.0
    route.last_success_at = _time(raw.get("last_success_at"))
    route.updated_at = _time(raw.get("updated_at"))
    return route


def _count(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"not a count: {value!r}")
    return value


def _time(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"not a timestamp: {value!r}")
    return float(value)
