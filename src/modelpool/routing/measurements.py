"""Adapter: the health registry seen through the `Measurements` protocol the strategies read."""

from __future__ import annotations

from modelpool.health.registry import HealthRegistry


class RegistryMeasurements:
    __slots__ = ("_reg",)

    def __init__(self, registry: HealthRegistry) -> None:
        self._reg = registry

    def ewma_ttft(self, route_key: str) -> float | None:
        return self._reg.snapshot(route_key).ewma_ttft if route_key in self._reg else None

    def median_ttft(self, route_key: str) -> float | None:
        return self._reg.snapshot(route_key).median_ttft if route_key in self._reg else None

    def median_tps(self, route_key: str) -> float | None:
        return self._reg.snapshot(route_key).median_tps if route_key in self._reg else None

    def served(self, route_key: str) -> int:
        return self._reg.snapshot(route_key).successes if route_key in self._reg else 0

    def laplace(self, route_key: str) -> float:
        return self._reg.snapshot(route_key).success_rate_laplace if route_key in self._reg else 0.5
