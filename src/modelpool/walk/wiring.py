"""Adapters between the walk and the parts it reports to."""

from __future__ import annotations

from collections.abc import Callable

from modelpool.events import EventBus
from modelpool.health.registry import HealthRegistry
from modelpool.routing.sticky import PinStore
from modelpool.upstream.client import AttemptFailure
from modelpool.walk.walker import AttemptResult


class GatewaySink:
    """Feeds walk outcomes into the health registry, the pins and the event bus."""

    __slots__ = ("_clock", "_events", "_pins", "_reg")

    def __init__(
        self, registry: HealthRegistry, pins: PinStore, events: EventBus, clock: Callable[[], float]
    ) -> None:
        self._clock = clock
        self._reg = registry
        self._pins = pins
        self._events = events

    def success(self, route_key: str, result: AttemptResult) -> None:
        self._reg.record_success(route_key, result.ttft, result.tokens_per_s)

    def is_resting(self, route_key: str) -> bool:
        return self._reg.is_resting(route_key, self._clock())

    def failure(self, route_key: str, failure: AttemptFailure) -> None:
        horizon = self._reg.record_failure(
            route_key, failure.kind, failure.message, retry_after=failure.retry_after, status=failure.status
        )
        dropped = self._pins.drop_route(route_key)  # a pin expires when its route fails (SPEC §3.3)
        rest = max(0.0, horizon - self._clock())
        self._events.publish(
            "failure",
            route=route_key,
            kind=failure.kind.value,
            status=failure.status,
            rest=round(rest, 1),
            pins_dropped=dropped,
        )
