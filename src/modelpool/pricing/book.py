"""Which price each route has (SPEC §14): config wins, then the price library, else none.

Order for a route: `model_info` prices of its model (exact id, then globs, as capabilities are found),
then the provider's `prices`, then `genai-prices` unless `prices: {source: off}` (top level or provider).
One `PriceBook` per runtime (it is rebuilt with the configuration); a route is resolved on first use and
memoised, so a call reads one dict entry and, for period prices, the period in force.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from modelpool.catalog.filters import glob_match
from modelpool.catalog.model import Route
from modelpool.config.prices import PeriodPrices, PriceSource, TokenPrices
from modelpool.config.schema import LOCAL_KINDS, Config, ModelInfo, ProviderConfig
from modelpool.pricing import library
from modelpool.pricing.prices import FixedPricing, PeriodPricing, Price, RoutePricing

_MISSING = object()
_NOT_YET: Any = object()


class PriceBook:
    def __init__(
        self,
        config: Config,
        routes: Mapping[str, Route],
        is_peak: Callable[[float], bool],
        use_library: bool = True,
    ) -> None:
        self.config = config
        self.routes = routes
        self._is_peak = is_peak
        self._providers = {p.id: p for p in config.providers}
        self._library = use_library and config.prices.source != "off"
        self._memo: dict[str, RoutePricing | None] = {}

    def pricing(self, route_key: str) -> RoutePricing | None:
        found = self._memo.get(route_key, _MISSING)
        if found is _MISSING:
            found = self._resolve(route_key)
            if found is not _NOT_YET:
                self._memo[route_key] = found
            else:
                found = None  # the library is still loading: no price for now, asked again next time
        return found  # type: ignore[return-value]

    def warm(self) -> None:
        """Resolve every route now (a worker thread at start-up: library look-ups cost milliseconds)."""
        for key in list(self.routes):
            self.pricing(key)

    def price(self, route_key: str, now: float) -> Price | None:
        """The price in force at `now` (epoch seconds) for a route, or None (unknown: no cost)."""
        pricing = self.pricing(route_key)
        if pricing is None:
            return None
        return pricing.at(now, lambda: self._is_peak(now))

    def pricer(self, now: float) -> Callable[[str], Price | None]:
        """Prices as they stood at `now` (a call's start), for every attempt of that call. The period is
        read at most once."""
        peak: list[bool] = []

        def is_peak() -> bool:
            if not peak:
                peak.append(self._is_peak(now))
            return peak[0]

        def price(route_key: str) -> Price | None:
            pricing = self.pricing(route_key)
            return pricing.at(now, is_peak) if pricing is not None else None

        return price

    def describe(self, now: float) -> list[dict[str, Any]]:
        """Every route's prices, for the admin API and `modelpool keys`/`usage` helpers."""
        out: list[dict[str, Any]] = []
        for key in self.routes:
            pricing = self.pricing(key)
            price = self.price(key, now)
            out.append(
                {
                    "route": key,
                    "pricing": pricing.describe() if pricing is not None else None,
                    "in_force": price.describe() if price is not None else None,
                }
            )
        return out

    # ---- resolution -------------------------------------------------------------------------

    def _resolve(self, route_key: str) -> Any:
        route = self.routes.get(route_key)
        if route is None:
            return None
        provider = self._providers.get(route.provider_id)
        if provider is None:
            return None
        configured = _model_prices(provider.model_info, route.model_id, route.normalized)
        if configured is None:
            configured = provider.prices
        if isinstance(configured, TokenPrices):
            return FixedPricing(Price.from_config(configured, f"config {provider.id}"))
        if isinstance(configured, PeriodPrices):
            return PeriodPricing(
                Price.from_config(configured.peak, f"config {provider.id} (peak)"),
                Price.from_config(configured.off_peak, f"config {provider.id} (off-peak)"),
            )
        if isinstance(configured, PriceSource) and configured.source == "off":
            return None
        if not self._library or provider.kind in LOCAL_KINDS:
            return None  # a local model costs nothing unless `prices` say so: no library price
        if not library.ready():
            return _NOT_YET
        return library.lookup(provider.id, provider.kind, provider.base_url, route.model_id)


def _model_prices(
    model_info: Mapping[str, ModelInfo], model_id: str, normalized: str
) -> TokenPrices | PeriodPrices | PriceSource | None:
    """Prices from `model_info`: an exact key beats globs; the first glob that names prices wins."""
    names = (model_id.lower(), normalized)
    for key, info in model_info.items():
        if info.prices is not None and key.strip().lower() in names:
            return info.prices
    for key, info in model_info.items():
        if info.prices is not None and (glob_match(key, model_id) or glob_match(key, normalized)):
            return info.prices
    return None


def provider_has_prices(provider: ProviderConfig) -> bool:
    return provider.prices is not None or any(i.prices is not None for i in provider.model_info.values())
