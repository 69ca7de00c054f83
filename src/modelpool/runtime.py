"""An immutable snapshot of everything derived from one effective configuration.

A config reload or a re-discovery builds a new `Runtime` and swaps the reference atomically, so a call
in flight keeps the snapshot it started with and no request ever sees half-applied settings.

Nothing a runtime holds refers back to it (its memo's tables and books capture the config, never the
runtime): a replaced runtime is freed by reference counting when its last call ends. A server process
moves each new runtime out of the garbage collector's reach (`offloop.settle_heap`), so a full collection
never walks 10,000 routes on the event loop (issue #29), and a cycle here would leak a frozen runtime per
reload (tests/config/test_reload_swap.py checks there is none).
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
        return _policy(self.config, self.periods)

    def provider_order(self, now: float | None = None) -> tuple[list[str], str]:
        """The base order in force and where it comes from (SPEC §3.1 step 4, §7): the period's list,
        or `pool.provider_order` when that list is empty (inherit)."""
        peak = self.config.peak
        if not peak.peak_provider_order and not peak.off_peak_provider_order:
            # Both period lists empty: the overlay has no opinion, so no need to evaluate the period.
            return self.config.pool.provider_order, "pool.provider_order"
        return self.policy().provider_order_with_source(self.config.pool, now)

    def weight(self, provider_id: str) -> float:
        return _weight(self.config, self.providers, provider_id)

    def cost(self, provider_id: str, peak: bool = False) -> float | None:
        return _cost(self.config, self.providers, provider_id, peak)

    # The tables below capture the config and the provider map, not `self` (see the module's docstring).

    def route_weights(self) -> Mapping[str, float]:
        """`weight` of every route, by route key (a strategy reads one per candidate per call)."""
        table: Mapping[str, float] | None = self.memo.get("route_weights")
        if table is None:
            config, providers = self.config, self.providers
            table = _ByRoute(self.catalog.routes, lambda r: _weight(config, providers, r.provider_id))
            self.memo["route_weights"] = table
        return table

    def route_costs(self, peak: bool) -> Mapping[str, float | None]:
        """`cost` of every route in the period, by route key (a strategy reads one per candidate per call)."""
        table: Mapping[str, float | None] | None = self.memo.get(("route_costs", peak))
        if table is None:
            config, providers = self.config, self.providers
            table = _ByRoute(self.catalog.routes, lambda r: _cost(config, providers, r.provider_id, peak))
            self.memo[("route_costs", peak)] = table
        return table

    def route_timeouts(self) -> Mapping[str, RouteTimeouts]:
        """Each route's time limits in force (SPEC §3.9), by route key, resolved once per snapshot."""
        table: Mapping[str, RouteTimeouts] | None = self.memo.get("route_timeouts")
        if table is None:
            config, providers = self.config, self.providers
            table = _ByRoute(
                self.catalog.routes, lambda r: resolve_timeouts(config, providers.get(r.provider_id), r)
            )
            self.memo["route_timeouts"] = table
        return table

    def prices(self) -> PriceBook:
        """The `PriceBook` of this snapshot (SPEC §14), built on first use and kept with the snapshot."""
        book: PriceBook | None = self.memo.get("prices")
        if book is None:
            from modelpool.pricing import PriceBook

            config, periods = self.config, self.periods
            book = self.memo["prices"] = PriceBook(
                config, self.catalog.routes, lambda now: _policy(config, periods).is_peak(now)
            )
        return book

    def cache_lifetime(self, provider_id: str) -> float:
        p = self.providers.get(provider_id)
        if p and p.cache_lifetime is not None:
            return p.cache_lifetime
        return 300.0


def _policy(config: Config, periods: Callable[[], PeriodPolicy] | None) -> PeriodPolicy:
    if periods is not None:
        return periods()
    return PeriodPolicy(config.peak, None, config.holidays)  # weekday rule only


def _weight(config: Config, providers: Mapping[str, ProviderConfig], provider_id: str) -> float:
    weights = config.pool.weights
    if provider_id in weights:
        return weights[provider_id]
    p = providers.get(provider_id)
    return p.weight if p else 1.0


def _cost(
    config: Config, providers: Mapping[str, ProviderConfig], provider_id: str, peak: bool
) -> float | None:
    hint = config.pool.costs.get(provider_id)
    if hint is None:
        p = providers.get(provider_id)
        hint = p.cost if p else None
    if isinstance(hint, PeriodCost):
        return hint.peak if peak else hint.off_peak
    return hint


class _ByRoute(dict[str, Any]):
    """A per-route table filled on first read of each key: a call reads only its pool's routes, and
    filling it for the whole catalog at once cost the first call after a reload O(catalog) (~10 ms at
    10,000 routes, issue #21). A race between two threads only computes one entry twice."""

    def __init__(self, routes: Mapping[str, Any], compute: Callable[[Any], Any]) -> None:
        super().__init__()
        self._routes, self._compute = routes, compute

    def __missing__(self, key: str) -> Any:
        value = self[key] = self._compute(self._routes[key])
        return value
