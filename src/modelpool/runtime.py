"""An immutable snapshot of everything derived from one effective configuration.

A config reload or a re-discovery builds a new `Runtime` and swaps the reference atomically, so a call
in flight keeps the snapshot it started with and no request ever sees half-applied settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from modelpool.catalog import Catalog
from modelpool.config.schema import Config, PeriodCost, ProviderConfig
from modelpool.upstream.providers import ProviderEndpoint


@dataclass(frozen=True, slots=True)
class Runtime:
    config: Config
    catalog: Catalog
    endpoints: Mapping[str, ProviderEndpoint]
    version: int = 0
    warnings: tuple[str, ...] = field(default_factory=tuple)
    providers: Mapping[str, ProviderConfig] = field(init=False)  # by id: read per candidate per call
    # Work that depends only on this snapshot (e.g. a pool's eligible routes in base order), memoised by
    # the routing core. Dropped with the snapshot on reload, so it can never go stale.
    memo: dict[Any, Any] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "providers", {p.id: p for p in self.config.providers})
        object.__setattr__(self, "memo", {})

    def provider_order(self) -> list[str]:
        # Seam: the peak/off-peak overlay (SPEC §7) replaces this list during its period.
        return self.config.pool.provider_order

    def weight(self, provider_id: str) -> float:
        weights = self.config.pool.weights
        if provider_id in weights:
            return weights[provider_id]
        p = self.providers.get(provider_id)
        return p.weight if p else 1.0

    def cost(self, provider_id: str, peak: bool = False) -> float | None:
        hint = self.config.pool.costs.get(provider_id)
        if hint is None:
            p = self.providers.get(provider_id)
            hint = p.cost if p else None
        if isinstance(hint, PeriodCost):
            return hint.peak if peak else hint.off_peak
        return hint

    def cache_lifetime(self, provider_id: str) -> float:
        p = self.providers.get(provider_id)
        if p and p.cache_lifetime is not None:
            return p.cache_lifetime
        return 300.0
