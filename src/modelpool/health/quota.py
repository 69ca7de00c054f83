"""Quota seen before it runs out (SPEC §3.8): what the upstreams announce is left, per route.

Every reply carries it (the headers: `quota_headers`). The attempt only looks whether the reply has one
(`announces_quota`: a few lookups in the parsed headers, nothing allocated); the headers are read here,
after the attempt's task step (`loop.call_soon`), not on the request path.

A route whose remaining requests fall below `pool.quota.reserve.requests`, or whose remaining tokens fall
below `reserve.tokens` + the call's estimate, is *low* until its reset: the planner demotes it (not a rest,
not a failure), the sticky pin moves away from it. At the reset, or on a reply showing room again, it is
back. What a route announced is shared with the other replicas (`live.quota`) like the fleet view: at once
when its request lowness changes, and at most once a second while it announces a token budget (whether a
route is short of tokens depends on each call's size, so the other replicas need the count itself).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from modelpool.health.quota_headers import Quota, read_quota

log = logging.getLogger(__name__)

SHARED_NS = "live.quota"
SHARE_EVERY = 1.0  # seconds between two shared token readings of one route (a change of lowness: at once)


def reserve_in_force(runtime: Any) -> tuple[int, int, bool]:
    """(requests, tokens, enabled) of the runtime's `pool.quota`, read once per runtime (`runtime.memo`):
    the quota book asks on every reply."""
    memo = runtime.memo
    found: tuple[int, int, bool] | None = memo.get("quota_reserve")
    if found is None:
        quota = runtime.config.pool.quota
        found = memo["quota_reserve"] = (quota.reserve.requests, quota.reserve.tokens, quota.enabled)
    return found


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
        self._shared_at: dict[str, float] = {}  # route → when its last reading was shared
        self._share_later: dict[str, asyncio.TimerHandle] = {}  # route → the share of its latest reading
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
        if shared or self._share is None:
            return
        if was or route in self.low:
            self._send(route, q, now)  # request lowness (or its end): the others must know at once
        elif q.tokens is not None and q.tokens_reset > now:
            wait = self._shared_at.get(route, -math.inf) + SHARE_EVERY - now
            if wait <= 0:
                self._send(route, q, now)
            elif route not in self._share_later:
                # The latest reading goes out when the second is up: the last one before this replica
                # stops calling a route short of tokens is the one the others most need.
                try:
                    loop = asyncio.get_running_loop()
                except RuntimeError:
                    self._send(route, q, now)
                else:
                    self._share_later[route] = loop.call_later(wait, self._send_latest, route)

    def _send(self, route: str, q: Quota, now: float) -> None:
        assert self._share is not None
        handle = self._share_later.pop(route, None)
        if handle is not None:
            handle.cancel()
        self._shared_at[route] = now
        tokens_until = q.tokens_reset if q.tokens is not None else now
        until = max(self.low.get(route, now), tokens_until)
        self._share(route, q.to_dict(), max(1.0, until - now + 1.0))

    def _send_latest(self, route: str) -> None:
        self._share_later.pop(route, None)
        q = self.routes.get(route)
        if q is not None:
            self._send(route, q, self._clock())

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
