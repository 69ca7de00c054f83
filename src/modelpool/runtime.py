"""An immutable snapshot of everything derived from one effective configuration.

A config reload or a re-discovery builds a new `Runtime` and swaps the reference atomically, so a call
in flight keeps the snapshot it started with and no request ever sees half-applied settings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from modelpool.catalog import Catalog
from modelpool.catalog.timeouts import RouteTimeouts, resolve_timeouts
from modelpool.config.schema import Config, PeriodCost, ProviderConfig
from modelpool.periods import PeriodPolicy
from modelpool.upstream.providers import ProviderEndpoint

if TYPE_CHECKING:
    from modelpool.pricing import PriceBook


@dataclass(frozen=True, slots=True)
class Runtime:
    config: Config
    catalog: Catalog
    endpoints: Mapping[str, ProviderEndpoint]
    version: int = 0
    warnings: tuple[str, ...] = field(default_factory=tuple)
    # The period policy in force (config × the current calendar). A callable, not a value: the calendar
    # syncs in the background and the policy it yields changes without a new runtime.
    periods: Callable[[], PeriodPolicy] | None = None
    providers: Mapping[str, ProviderConfig] = field(init=False)  # by id: read per candidate per call
    # Work that depends only on this snapshot (e.g. a pool's eligible routes in base order), memoised by
    # the routing core. Dropped with the snapshot on reload, so it can never go stale.
    memo: dict[Any, Any] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "providers", {p.id: p for p in self.config.providers})
        object.__setattr__(self, "memo", {})

    def policy(self) -> PeriodPolicy:
        if self.periods is not None:
            return self.periods()
        return PeriodPolicy(self.config.peak, None, self.config.holidays)  # weekday rule only

    def provider_order(self, now: float | None = None) -> tuple[list[str], str]:
        """The base order in force and where it comes from (SPEC §3.1 step 4, §7): the period's list,
        or `pool.provider_order` when that list is empty (inherit)."""
        peak = self.config.peak
        if not peak.peak_provider_order and not peak.off_peak_provider_order:
            # Both period lists empty: the overlay has no opinion, so no need to evaluate the period.
            return self.config.pool.provider_order, "pool.provider_order"
        return self.policy().provider_order_with_source(self.config.pool, now)

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

    def route_weights(self) -> Mapping[str, float]:
        """`weight` of every route, by route key (a strategy reads one per candidate per call)."""
        table: Mapping[str, float] | None = self.memo.get("route_weights")
        if table is None:
            table = self.memo["route_weights"] = _ByRoute(self, lambda r: self.weight(r.provider_id))
        return table

    def route_costs(self, peak: bool) -> Mapping[str, float | None]:
        """`cost` of every route in the period, by route key (a strategy reads one per candidate per call)."""
        table: Mapping[str, float | None] | None = self.memo.get(("route_costs", peak))
        if table is None:
            table = _ByRoute(self, lambda r: self.cost(r.provider_id, peak=peak))
            self.memo[("route_costs", peak)] = table
        return table

    def route_timeouts(self) -> Mapping[str, RouteTimeouts]:
        """Each route's time limits in force (SPEC §3.9), by route key, resolved once per snapshot."""
        table: Mapping[str, RouteTimeouts] | None = self.memo.get("route_timeouts")
        if table is None:
            table = _ByRoute(
                self, lambda r: resolve_timeouts(self.config, self.providers.get(r.provider_id), r)
            )
            self.memo["route_timeouts"] = table
        return table

    def prices(self) -> PriceBook:
        """The `PriceBook` of this snapshot (SPEC §14), built on first use and kept with the snapshot."""
        book: PriceBook | None = self.memo.get("prices")
        if book is None:
            from modelpool.pricing import PriceBook

            book = self.memo["prices"] = PriceBook(
                self.config, self.catalog.routes, lambda now: self.policy().is_peak(now)
            )
        return book

    def cache_lifetime(self, provider_id: str) -> float:
        p = self.providers.get(provider_id)
        if p and p.cache_lifetime is not None:
            return p.cache_lifetime
        return 300.0


class _ByRoute(dict[str, Any]):
    """A per-route table filled on first read of each key: a call reads only its pool's routes, and
    filling it for the whole catalog at once cost the first call after a reload O(catalog) (~10 ms at
    10,000 routes, issue #21). A race between two threads only computes one entry twice."""

    def __init__(self, rt: Runtime, compute: Callable[[Any], Any]) -> None:
        super().__init__()
        self._rt, self._compute = rt, compute

    def __missing__(self, key: str) -> Any:
        value = self[key] = self._compute(self._rt.catalog.routes[key])
        return value
