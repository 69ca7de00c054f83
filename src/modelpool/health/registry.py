"""Per-route health: counters, last error, rests and latency (SPEC §5).

The registry sits on the hot path — every attempt reads and writes it — so every method is synchronous,
constant-time and does no I/O. Persistence is a callback (`persist`) that the state layer turns into a
batched, non-blocking write; latency windows deliberately stay in memory, because a stale window is
worse than a short one.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from datetime import tzinfo
from typing import Any

from modelpool.config.schema import PoolConfig
from modelpool.health.classify import FailureKind, classify, counts_against_route, error_text
from modelpool.health.record import (
    MAX_ERROR_CHARS,
    RouteHealth,
    RouteRecord,
    RouteState,
    add_tps,
    add_ttft,
    from_record,
    health_of,
    is_sample,
)
from modelpool.health.rests import local_zone, rest_horizon

log = logging.getLogger(__name__)

Listener = Callable[[str, RouteHealth], None]
# What another process's view of a route replaces (`replace`); latency samples stay per process.
SHARED_FIELDS = (
    "attempts",
    "successes",
    "failures",
    "consecutive",
    "last_error",
    "last_kind",
    "last_status",
    "last_error_at",
    "rest_until",
    "last_success_at",
    "updated_at",
)
Persist = Callable[[str, dict[str, Any]], None]
Forget = Callable[[str], None]


class HealthRegistry:
    """Health of every route, keyed by route key (`provider_id/model_id`)."""

    def __init__(
        self,
        config_getter: Callable[[], PoolConfig],
        clock: Callable[[], float] = time.time,
        tz: tzinfo | None = None,
        persist: Persist | None = None,
        forget: Forget | None = None,
    ) -> None:
        # The getter (not a copy) so a live config reload changes the next rest without a rebuild.
        self._config = config_getter
        self._clock = clock
        self._tz = tz if tz is not None else local_zone()
        self._persist = persist
        self._forget = forget
        self._routes: dict[str, RouteRecord] = {}
        self._listeners: list[Listener] = []
        # No route rests at or after this moment: the latest rest horizon ever set (a rest ended early by
        # a success leaves it high, which only costs the planner its per-route check until it passes).
        self._rests_end = 0.0
        # Counts changes to any record: what is derived from the records (the planner's memoised
        # rankings) stays valid while it is unchanged.
        self.version = 0

    # -- reads -------------------------------------------------------------------------------------

    def state(self, route_key: str, now: float | None = None) -> RouteState:
        route = self._routes.get(route_key)
        return route.state(self._now(now)) if route else RouteState.UNKNOWN

    def rest_remaining(self, route_key: str, now: float | None = None) -> float:
        route = self._routes.get(route_key)
        return max(0.0, route.rest_until - self._now(now)) if route else 0.0

    def is_resting(self, route_key: str, now: float | None = None) -> bool:
        route = self._routes.get(route_key)
        return route is not None and route.rest_until > self._now(now)

    def any_resting(self, now: float | None = None) -> bool:
        """False when certainly no route rests: the planner's health gate then skips its per-route pass."""
        return self._rests_end > self._now(now)

    def record(self, route_key: str) -> RouteRecord | None:
        """The live record (read-only by convention) for hot-path readers such as the strategies, which
        need one or two fields and must not pay for a full snapshot."""
        return self._routes.get(route_key)

    @property
    def records(self) -> Mapping[str, RouteRecord]:
        """Every live record by route key (read-only by convention; the mapping itself stays the same
        object), for readers that look up many routes per call."""
        return self._routes

    def snapshot(self, route_key: str, now: float | None = None) -> RouteHealth:
        route = self._routes.get(route_key)
        return health_of(route_key, route or RouteRecord(), self._now(now))

    def all(self, now: float | None = None) -> dict[str, RouteHealth]:
        at = self._now(now)
        return {key: health_of(key, route, at) for key, route in self._routes.items()}

    def __contains__(self, route_key: object) -> bool:
        return route_key in self._routes

    def __len__(self) -> int:
        return len(self._routes)

    # -- writes ------------------------------------------------------------------------------------

    def record_success(
        self,
        route_key: str,
        ttft: float | None = None,
        tokens_per_s: float | None = None,
        now: float | None = None,
    ) -> None:
        at = self._now(now)
        route = self._route(route_key)
        route.attempts += 1
        route.successes += 1
        route.consecutive = 0
        # A success proves the route works again, even one tried inside its rest because all were resting.
        route.rest_until = 0.0
        route.last_success_at = at
        route.updated_at = at
        if ttft is not None and is_sample(ttft):
            add_ttft(route, ttft, at)
        if tokens_per_s is not None and is_sample(tokens_per_s):
            add_tps(route, tokens_per_s, at)
        route.medians = None  # the windows may have moved
        self._changed(route_key, route, at)

    def record_first_event(self, route_key: str, seconds: float) -> None:
        """A measurement only (SPEC §3.7): a hedge's loser — its slow first event, or the time it had waited
        without one when it was cancelled (a censored sample, a lower bound). No counter, no rest: the
        route did nothing wrong, it was only slower than another."""
        if not is_sample(seconds):
            return
        add_ttft(self._route(route_key), seconds, self._now(None), detect=False)
        self.version += 1  # the planner's memoised rankings must see the new sample

    def ttft_quantile(self, route_key: str, q: float) -> tuple[float | None, int]:
        """(the q-quantile of the route's recent time-to-first-event window, how many samples)."""
        route = self._routes.get(route_key)
        if route is None or not route.ttft:
            return None, 0
        window = sorted(route.ttft)
        n = len(window)
        return window[min(n - 1, max(0, math.ceil(q * n) - 1))], n

    def record_failure(
        self,
        route_key: str,
        kind: FailureKind | str,
        message: str | bytes | object | None,
        *,
        retry_after: float | None = None,
        status: int | None = None,
        now: float | None = None,
    ) -> float:
        """Count a failed attempt and start its rest; returns the rest horizon (epoch seconds, 0 = none).

        `request` and `cancelled` failures are not the route's fault: nothing is counted or rested.
        """
        kind = FailureKind(kind)
        route = self._routes.get(route_key)
        if not counts_against_route(kind):
            return route.rest_until if route else 0.0
        at = self._now(now)
        route = route or self._route(route_key)
        route.attempts += 1
        route.failures += 1
        route.consecutive += 1
        route.last_error = error_text(message)[:MAX_ERROR_CHARS]
        route.last_kind = kind
        route.last_status = status
        route.last_error_at = at
        route.updated_at = at
        horizon = rest_horizon(kind, route.consecutive, self._config(), at, self._tz, retry_after)
        # Never shorten a rest already in force: a network blip must not cut a quota wall short.
        route.rest_until = max(route.rest_until, horizon)
        self._rests_end = max(self._rests_end, route.rest_until)
        self._changed(route_key, route, at)
        return route.rest_until

    def reset(self, route_key: str | None = None) -> None:
        """Forget one route's health, or every route's (`None`)."""
        keys = list(self._routes) if route_key is None else [route_key]
        at = self._now(None)
        for key in keys:
            if self._routes.pop(key, None) is None:
                continue
            self.version += 1
            self._drop_persisted(key)
            self._notify(key, health_of(key, RouteRecord(), at))

    # -- persistence -------------------------------------------------------------------------------

    def load(self, records: dict[str, Any], now: float | None = None, *, persist_ttl: float = 86400.0) -> int:
        """Restore persisted records younger than `persist_ttl` (0 disables); returns how many.

        Each stored error's kind is re-derived from its text with the current classifier, so a newer
        classifier relabels history — and a record it now reads as a quota wall keeps resting until the
        quota horizon of that failure. Malformed records are skipped.
        """
        if persist_ttl <= 0 or not isinstance(records, dict):
            return 0
        at = self._now(now)
        restored = 0
        for key, raw in records.items():
            route = self._restore(key, raw, at, persist_ttl)
            if route is None:
                continue
            self._routes[key] = route
            self.version += 1
            self._rests_end = max(self._rests_end, route.rest_until)
            restored += 1
            self._notify(key, health_of(key, route, at))
        return restored

    def replace(self, route_key: str, raw: dict[str, Any] | None) -> None:
        """Take the shared view of a route that another process merged (redis state): its counters,
        last error and rest replace the local ones, the latency window stays local. None forgets it.
        Nothing is persisted back — the change came from the shared store."""
        if raw is None:
            if self._routes.pop(route_key, None) is not None:
                self.version += 1
                self._notify(route_key, health_of(route_key, RouteRecord(), self._now(None)))
            return
        try:
            incoming = from_record(raw)
        except (TypeError, ValueError, OverflowError) as exc:
            log.warning("skipping malformed shared health record for %r: %s", route_key, exc)
            return
        route = self._route(route_key)
        for field in SHARED_FIELDS:
            setattr(route, field, getattr(incoming, field))
        self.version += 1
        self._rests_end = max(self._rests_end, route.rest_until)
        if self._listeners:
            self._notify(route_key, health_of(route_key, route, self._now(None)))

    def _restore(self, key: object, raw: object, now: float, ttl: float) -> RouteRecord | None:
        if not isinstance(key, str) or not isinstance(raw, dict):
            log.warning("skipping malformed health record for %r", key)
            return None
        try:
            route = from_record(raw)
        except (TypeError, ValueError, OverflowError) as exc:
            log.warning("skipping malformed health record for %r: %s", key, exc)
            return None
        if route.updated_at is None:
            return None
        if now - route.updated_at >= ttl and route.rest_until <= now:
            # Old history is forgotten, but never a rest still in force: a quota wall hit just after
            # midnight lasts to the reset hour of the *next* day, which can be longer than the ttl.
            return None
        current = self._routes.get(key)
        if current is not None and (current.updated_at or 0.0) >= route.updated_at:
            return None  # live state observed since start wins over the stored copy
        self._relabel(route)
        return route

    def _relabel(self, route: RouteRecord) -> None:
        if not route.last_error:
            return
        stored = route.last_kind
        kind = classify(route.last_status, route.last_error, network=stored is FailureKind.NETWORK)
        if kind is stored:
            return
        route.last_kind = kind
        if route.last_error_at is None or route.consecutive == 0:
            return
        horizon = rest_horizon(kind, route.consecutive, self._config(), route.last_error_at, self._tz)
        # The stored horizon was computed for the old label; the new label decides the rest — except
        # that a quota wall never ends sooner than it was already going to.
        route.rest_until = max(route.rest_until, horizon) if kind is FailureKind.QUOTA else horizon

    def _drop_persisted(self, key: str) -> None:
        try:
            if self._forget is not None:
                self._forget(key)
            elif self._persist is not None:
                # Without a delete hook, overwrite with a blank record so a restart does not revive it.
                self._persist(key, RouteRecord().persistable())
        except Exception:
            log.exception("health persistence failed for %s", key)

    # -- listeners ---------------------------------------------------------------------------------

    @property
    def listeners(self) -> tuple[Listener, ...]:
        return tuple(self._listeners)

    def add_listener(self, listener: Listener) -> Callable[[], None]:
        """Call `listener(route_key, RouteHealth)` after every change; returns an unsubscribe function."""
        self._listeners.append(listener)
        return lambda: self.remove_listener(listener)

    def remove_listener(self, listener: Listener) -> None:
        try:
            self._listeners.remove(listener)
        except ValueError:
            pass

    # -- internals ---------------------------------------------------------------------------------

    def _now(self, now: float | None) -> float:
        return self._clock() if now is None else now

    def _route(self, route_key: str) -> RouteRecord:
        route = self._routes.get(route_key)
        if route is None:
            route = self._routes[route_key] = RouteRecord()
        return route

    def _changed(self, route_key: str, route: RouteRecord, now: float) -> None:
        self.version += 1
        if self._persist is not None:
            try:
                self._persist(route_key, route.persistable())
            except Exception:
                # Persistence is best-effort; it must never fail the request that caused the change.
                log.exception("health persistence failed for %s", route_key)
        if self._listeners:
            self._notify(route_key, health_of(route_key, route, now))

    def _notify(self, route_key: str, health: RouteHealth) -> None:
        for listener in tuple(self._listeners):
            try:
                listener(route_key, health)
            except Exception:
                log.exception("health listener %r failed", listener)
