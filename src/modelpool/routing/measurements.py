"""Adapter: the health registry seen through the `Measurements` protocol the strategies read.

Reads the live records directly (not `snapshot()`): planning reads a field or two per candidate, and a
full snapshot per candidate per call cost more than the rest of the pipeline together.
"""

from __future__ import annotations

from modelpool.health.record import RouteRecord, window_medians
from modelpool.health.registry import HealthRegistry


def medians(rec: RouteRecord) -> tuple[float | None, float | None]:
    """The record's (TTFT, tok/s) window medians, memoised on it until the registry adds a sample."""
    return window_medians(rec)


class RegistryMeasurements:
    __slots__ = ("_records", "_reg")

    def __init__(self, registry: HealthRegistry) -> None:
        self._reg = registry
        self._records = registry.records  # read per route per ranking: a lookup, not a method call

    def version(self) -> int:
        return self._reg.version

    def ewma_ttft(self, route_key: str) -> float | None:
        rec = self._records.get(route_key)
        return rec.ewma_ttft if rec is not None else None

    def median_ttft(self, route_key: str) -> float | None:
        rec = self._records.get(route_key)
        return medians(rec)[0] if rec is not None else None

    def median_tps(self, route_key: str) -> float | None:
        rec = self._records.get(route_key)
        return medians(rec)[1] if rec is not None else None

    def served(self, route_key: str) -> int:
        rec = self._records.get(route_key)
        return rec.successes if rec is not None else 0

    def laplace(self, route_key: str) -> float:
        rec = self._records.get(route_key)
        if rec is None:
            return 0.5
        return (rec.successes + 1) / (rec.attempts + 2)

    def sampled(self, route_key: str) -> tuple[int, float | None]:
        rec = self._records.get(route_key)
        return (max(len(rec.ttft), len(rec.tps)), rec.sampled_at) if rec is not None else (0, None)

    def unsettled(self, route_key: str) -> bool:
        rec = self._records.get(route_key)
        return rec is not None and (rec.shift_ttft > 0 or rec.shift_tps > 0)
