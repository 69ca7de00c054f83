"""Quota seen before it runs out (SPEC §3.8): what the upstreams announce is left, per route.

Every reply carries it — OpenAI-style `x-ratelimit-remaining-{requests,tokens}` with
`x-ratelimit-reset-{requests,tokens}` (durations: `6m0s`, `1s`, `20ms`), Anthropic's
`anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{remaining,reset}` (RFC 3339), and
`retry-after`. The attempt only looks whether the reply has one (`announces_quota`: a few lookups in the
parsed headers, nothing allocated); the headers are read here, after the attempt's task step
(`loop.call_soon`), not on the request path.

A route whose remaining requests fall below `pool.quota.reserve.requests`, or whose remaining tokens fall
below `reserve.tokens` + the call's estimate, is *low* until its reset: the planner demotes it (not a rest,
not a failure), the sticky pin moves away from it. At the reset, or on a reply showing room again, it is
back. A change of lowness is shared with the other replicas (`live.quota`) like the fleet view.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from modelpool.health.classify import parse_retry_after

log = logging.getLogger(__name__)

SHARED_NS = "live.quota"
_GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)")
_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
DEFAULT_RESET = 60.0  # a count announced without its reset: believed for a minute (a typical window)


@dataclass(slots=True)
class Quota:
    """What one route announced last: left counts (None: not announced) and when each resets (epoch)."""

    requests: int | None = None
    requests_reset: float = 0.0
    tokens: int | None = None
    tokens_reset: float = 0.0
    at: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "requests_reset": self.requests_reset,
            "tokens": self.tokens,
            "tokens_reset": self.tokens_reset,
            "at": self.at,
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Quota:
        def count(v: Any) -> int | None:
            return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None

        def moment(v: Any) -> float:
            return float(v) if isinstance(v, int | float) and math.isfinite(v) else 0.0

        return cls(
            count(raw.get("requests")),
            moment(raw.get("requests_reset")),
            count(raw.get("tokens")),
            moment(raw.get("tokens_reset")),
            moment(raw.get("at")),
        )


def parse_reset(value: str | None, now: float) -> float | None:
    """A reset as an epoch: an RFC 3339 moment (Anthropic), a Go-style duration (`6m0s`, `20ms`,
    OpenAI) or plain seconds. What a text means is worked out once (a route repeats the same few
    texts reply after reply) and kept: an absolute moment, or a delay from `now` (issue #29)."""
    if not value:
        return None
    found = _RESETS.get(value)
    if found is None:
        if len(_RESETS) >= MAX_RESETS_KEPT:
            _RESETS.clear()
        found = _RESETS[value] = _reset_of(value)
    absolute, seconds = found
    if seconds is None:
        return None
    return seconds if absolute else now + seconds


MAX_RESETS_KEPT = 1024
_RESETS: dict[str, tuple[bool, float | None]] = {}  # a reset text → (absolute?, epoch or delay)


def _reset_of(value: str) -> tuple[bool, float | None]:
    value = value.strip()
    if "T" in value and ("-" in value[:8]):
        try:
            return True, datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return True, None
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        # Some upstreams send the reset as a Unix time rather than a delay.
        return (True, seconds) if seconds > 1e9 else (False, max(0.0, seconds))
    parts = _GO_DURATION.findall(value)
    if not parts or "".join(n + u for n, u in parts) != value:
        return True, None
    return False, sum(float(n) * _UNITS[u] for n, u in parts)


def _count(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        n = int(value)  # surrounding whitespace is allowed by int() itself
    except ValueError:
        try:
            n = int(float(value.strip()))
        except ValueError:
            return None
    return max(0, n)


_ANTHROPIC_TOKENS = tuple(
    (f"anthropic-ratelimit-{name}-remaining", f"anthropic-ratelimit-{name}-reset")
    for name in ("tokens", "input-tokens", "output-tokens")
)


def read_quota(headers: Mapping[str, str], now: float) -> Quota | None:
    """The quota a reply's headers announce, or None when they announce none (case-insensitive
    `headers`, e.g. the connection's CIMultiDict)."""
    get = headers.get
    q = Quota(at=now)
    found = False
    req = _count(get("x-ratelimit-remaining-requests"))
    if req is not None:
        found = True
        q.requests = req
        q.requests_reset = parse_reset(get("x-ratelimit-reset-requests"), now) or now + DEFAULT_RESET
    tok = _count(get("x-ratelimit-remaining-tokens"))
    if tok is not None:
        found = True
        q.tokens = tok
        q.tokens_reset = parse_reset(get("x-ratelimit-reset-tokens"), now) or now + DEFAULT_RESET
    req = _count(get("anthropic-ratelimit-requests-remaining"))
    if req is not None:
        found = True
        q.requests = req if q.requests is None else min(q.requests, req)
        q.requests_reset = max(
            q.requests_reset, parse_reset(get("anthropic-ratelimit-requests-reset"), now) or now
        )
    # The tightest of the token budgets an Anthropic reply announces decides (the call's estimate is
    # of input; an exhausted output budget fails the call just as well).
    for remaining, reset_name in _ANTHROPIC_TOKENS:
        tok = _count(get(remaining))
        if tok is None:
            continue
        found = True
        reset = parse_reset(get(reset_name), now) or now + DEFAULT_RESET
        if q.tokens is None or tok < q.tokens:
            q.tokens, q.tokens_reset = tok, reset
    retry = parse_retry_after(get("retry-after"), now)
    if retry is not None and retry > 0:
        # "Come back later" on any answer: no request until then.
        found = True
        q.requests = 0
        q.requests_reset = max(q.requests_reset, now + retry)
    return q if found else None


# The headers whose presence says a reply announces its quota. Looked up once each per reply in the
# parsed (case-insensitive) headers: measured cheaper than a byte search per header while parsing
# (bench/quota.py `cost`), and a reply without them allocates nothing.
ANNOUNCING = (
    "x-ratelimit-remaining-requests",
    "x-ratelimit-remaining-tokens",
    "anthropic-ratelimit-requests-remaining",
    "anthropic-ratelimit-tokens-remaining",
    "anthropic-ratelimit-input-tokens-remaining",
    "anthropic-ratelimit-output-tokens-remaining",
    "retry-after",
)


def announces_quota(headers: Mapping[str, str]) -> bool:
    # A plain loop, not any(<generator>): no generator object per reply.
    for name in ANNOUNCING:  # noqa: SIM110
        if name in headers:
            return True
    return False


def clock_text(at: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at))


class QuotaBook:
    """The last announced quota of every route that announces one (in memory; shared on change)."""

    def __init__(
        self,
        reserve: Callable[[], tuple[int, int, bool]],
        clock: Callable[[], float] = time.time,
        share: Callable[[str, dict[str, Any] | None, float], None] | None = None,
    ) -> None:
        self._reserve = reserve  # (requests, tokens, enabled) of `pool.quota`, read per change
        self._clock = clock
        self._share = share
        self.routes: dict[str, Quota] = {}
        # Routes low on requests, by route key → until when (only those: the planner's per-call check).
        self.low: dict[str, float] = {}
        self.version = 0
        self._pending: list[tuple[str, Any]] = []
        # At most the fewest tokens any route announced it has left (a floor: lowered by every reading,
        # recomputed at most once a second off the request path): when every route has more than a bound
        # of the call's estimate, the planner's per-route pass is skipped.
        self.floor = math.inf
        self._floor_at = 0.0

    # -- the request path: a flag seen, the headers kept for later ------------------------------------

    def observe(self, route: str, headers: Mapping[str, str]) -> None:
        """An upstream reply of `route` carried rate-limit headers: read them after this task step."""
        if not route:
            return
        pending = self._pending
        pending.append((route, headers))
        if len(pending) == 1:
            try:
                asyncio.get_running_loop().call_soon(self._drain)
            except RuntimeError:
                self._drain()

    def spend(self, route: str) -> None:
        """An attempt is going to `route`: one request of what it announced is used (so a burst of calls
        between two replies does not all go to a route with one request left)."""
        q = self.routes.get(route)
        if q is not None and q.requests:
            q.requests -= 1
            if q.requests < self._reserve()[0]:
                self._mark(route, q, self._clock())

    # -- off the request path --------------------------------------------------------------------

    def _drain(self) -> None:
        pending, self._pending = self._pending, []
        now = self._clock()
        for route, headers in pending:
            try:
                q = read_quota(headers, now)
            except Exception:  # a malformed header never fails anything
                log.debug("unreadable rate-limit headers from %s", route, exc_info=True)
                continue
            if q is not None:
                self.update(route, q, now)
        if now - self._floor_at >= 1.0:
            self._floor_at = now
            self.floor = min(
                (q.tokens for q in self.routes.values() if q.tokens is not None and q.tokens_reset > now),
                default=math.inf,
            )

    def update(self, route: str, q: Quota, now: float | None = None, *, shared: bool = False) -> None:
        """A new reading of a route (its reply, or another replica's) replaces the last."""
        now = self._clock() if now is None else now
        old = self.routes.get(route)
        if shared and old is not None and old.at > q.at:
            return  # this replica saw a newer reply
        self.routes[route] = q
        if q.tokens is not None and q.tokens < self.floor:
            self.floor = q.tokens
        was = route in self.low
        self._mark(route, q, now)
        if not shared and self._share is not None and (was or route in self.low):
            until = self.low.get(route, now)
            self._share(route, q.to_dict(), max(1.0, until - now + 1.0))

    def apply_shared(self, route: str, raw: Any) -> None:
        if isinstance(raw, dict):
            self.update(route, Quota.from_dict(raw), shared=True)

    def _mark(self, route: str, q: Quota, now: float) -> None:
        reserve_requests, _, enabled = self._reserve()
        before = self.low.get(route)
        if enabled and q.requests is not None and q.requests < reserve_requests and q.requests_reset > now:
            self.low[route] = q.requests_reset
        else:
            self.low.pop(route, None)
        if self.low.get(route) != before:
            self.version += 1

    # -- the planner's reads ---------------------------------------------------------------------

    def why_low(self, route: str, now: float, est_tokens: Callable[[], int]) -> str | None:
        """Why `route` is demoted for a call of `est_tokens()` tokens (computed only when its token
        budget is known and small), or None when it has room."""
        reserve_requests, reserve_tokens, enabled = self._reserve()
        q = self.routes.get(route)
        if q is None or not enabled:
            return None
        if q.requests is not None and q.requests < reserve_requests and q.requests_reset > now:
            return f"quota low: {q.requests} requests left until {clock_text(q.requests_reset)}"
        if q.tokens is not None and q.tokens_reset > now:
            need = est_tokens() + reserve_tokens
            if q.tokens < need:
                return f"quota low: {q.tokens} tokens left (call ~{need}) until {clock_text(q.tokens_reset)}"
        return None

    def short(self, cands: Sequence[Any], now: float, call: Any) -> dict[str, str]:
        """The candidates (anything with a route `key`) short of quota for `call` (anything with
        `est_tokens`, `raw`, `has_images`), each with its reason. Runs per call while any route announced
        a quota, so the common case — every route with room — is a dict lookup and two comparisons per
        route: no reason text, and the call's token estimate (a walk over its body) only when a route's
        tokens left are below a bound of it (half the body's bytes: ~4 characters a token plus 4 per
        message can never exceed it, unless images count their fixed 1000)."""
        reserve_requests, reserve_tokens, enabled = self._reserve()
        if not enabled:
            return {}
        routes = self.routes
        raw = getattr(call, "raw", b"")
        bound = len(raw) // 2 + reserve_tokens + 1 if raw and not getattr(call, "has_images", False) else None
        if bound is not None and not self.low and self.floor >= bound:
            return {}  # every route has room for requests and for any call of this size
        need: int | None = None
        out: dict[str, str] = {}
        for c in cands:
            q = routes.get(c.key)
            if q is None:
                continue
            if q.requests is not None and q.requests < reserve_requests and q.requests_reset > now:
                out[c.key] = f"quota low: {q.requests} requests left until {clock_text(q.requests_reset)}"
            elif q.tokens is not None and q.tokens_reset > now and (bound is None or q.tokens < bound):
                if need is None:
                    need = int(call.est_tokens) + reserve_tokens
                if q.tokens < need:
                    out[c.key] = (
                        f"quota low: {q.tokens} tokens left (call ~{need}) until {clock_text(q.tokens_reset)}"
                    )
        return out

    def any_known(self) -> bool:
        return bool(self.routes)

    def describe(self, route: str, now: float | None = None) -> dict[str, Any] | None:
        """For status and the admin API: what the route announced and whether it is low now."""
        q = self.routes.get(route)
        if q is None:
            return None
        now = self._clock() if now is None else now
        out = q.to_dict()
        out["low"] = self.why_low(route, now, lambda: 0)
        return out

    def clear(self, route: str | None = None) -> None:
        """Forget what `route` (None: every route) announced — `POST /admin/health/reset` (SPEC §5)."""
        if route is None:
            self.routes.clear()
            self.low.clear()
        else:
            self.routes.pop(route, None)
            self.low.pop(route, None)
        self.floor = math.inf
        self._floor_at = 0.0
        self.version += 1
