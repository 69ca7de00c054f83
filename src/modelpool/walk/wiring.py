"""Adapters between the walk and the parts it reports to."""

from __future__ import annotations

from modelpool.health.registry import HealthRegistry
from modelpool.upstream.client import AttemptFailure
from modelpool.walk.walker import AttemptResult


class RegistrySink:
    """Feeds walk outcomes into the health registry."""

    __slots__ = ("_reg",)

    def __init__(self, registry: HealthRegistry) -> None:
        self._reg = registry

    def success(self, route_key: str, result: AttemptResult) -> None:
        self._reg.record_success(route_key, result.ttft, result.tokens_per_s)

    def failure(self, route_key: str, failure: AttemptFailure) -> None:
        self._reg.record_failure(
            route_key, failure.kind, failure.message, retry_after=failure.retry_after, status=failure.status
        )
