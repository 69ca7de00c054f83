"""Prices from the `genai-prices` library (SPEC §14): known providers' and models' prices, including the
provider's own time-of-day windows (DeepSeek's off-peak discount), turned into our `RoutePricing`.

Looked up once per route and configuration (the book memoises it), never per call. A route the library
does not know has no price: no cost, never a guess. Tiered prices (a higher rate above a prompt size)
keep their base tier — the rate of prompts below the first threshold — and say so in their source.
"""

from __future__ import annotations

import functools
import logging
from decimal import Decimal
from typing import Any

from modelpool.pricing.prices import Conditional, Price, RoutePricing, SchedulePricing

log = logging.getLogger(__name__)

# Our provider kinds that are themselves a library provider (the aggregator bills its own list).
_KIND_PROVIDER = {"openrouter": "openrouter", "anthropic": "anthropic"}

_snapshot: Any = None


def _snap() -> Any:
    global _snapshot
    if _snapshot is None:
        from genai_prices import data_snapshot

        _snapshot = data_snapshot.get_snapshot()
    return _snapshot


def ready() -> bool:
    """Loading the library's data takes about a second of CPU: it happens in a thread at start-up
    (`load`), and until it is done a route has no library price yet (asked again later)."""
    return _snapshot is not None


def load() -> None:
    _snap()


@functools.lru_cache(maxsize=65_536)
def lookup(provider_id: str, kind: str, base_url: str, model_id: str) -> RoutePricing | None:
    """The library's prices for one route, or None when it does not know the route.

    Memoised for the process (the library's data never changes once loaded; the result is immutable):
    ~0.1 ms a route, so a reload of a 10,000-route catalog would otherwise pay a second of CPU again for
    routes whose price cannot have changed (issue #21). Only called once the library is `ready()`."""
    try:
        found = _find(provider_id, kind, base_url, model_id)
    except Exception:  # the library must never break routing: no price is the safe answer
        log.debug("genai-prices lookup failed for %s/%s", provider_id, model_id, exc_info=True)
        return None
    if found is None:
        return None
    lib_provider, info, how = found
    return _schedule(info, f"genai-prices {lib_provider}/{info.id}{how}")


@functools.cache
def _provider_ids() -> frozenset[str]:
    return frozenset(p.id for p in _snap().providers)


def _find(provider_id: str, kind: str, base_url: str, model_id: str) -> tuple[str, Any, str] | None:
    snap = _snap()
    ids = _provider_ids()
    tries: list[tuple[str | None, str | None, str, str]] = []
    if provider_id in ids:
        tries.append((provider_id, None, model_id, ""))
    if kind in _KIND_PROVIDER:
        tries.append((_KIND_PROVIDER[kind], None, model_id, ""))
    if kind == "vercel" and "/" in model_id:
        # Vercel's AI Gateway bills the model maker's list price: `creator/model` → the creator's entry.
        creator, _, model = model_id.partition("/")
        if creator in ids:
            tries.append((creator, None, model, " (list price via vercel)"))
    for lib_id, url, ref, how in tries:
        try:
            provider, info = snap.find_provider_model(ref, None, lib_id, url)
        except LookupError:
            continue
        return provider.id, info, how
    # A first-party API root the library recognises. The provider is found by URL once per URL: the
    # library's own cache is keyed by model too, so every model of an unknown URL (a loopback fleet, a
    # self-hosted vLLM) would match the URL against every provider's pattern again (issue #21).
    by_url = _provider_by_url(base_url)
    if by_url is not None:
        try:
            provider, info = snap.find_provider_model(model_id, by_url, None, None)
        except LookupError:
            return None
        return provider.id, info, ""
    return None


@functools.lru_cache(maxsize=1024)
def _provider_by_url(base_url: str) -> Any:
    try:
        return _snap().find_provider(None, None, base_url)
    except LookupError:
        return None


def _schedule(info: Any, source: str) -> RoutePricing | None:
    prices = info.prices
    if not isinstance(prices, list):
        base = _price(prices, source)
        return SchedulePricing(base, ()) if base is not None else None
    base = _price(prices[0].prices, source)
    if base is None:
        return None
    conditionals: list[Conditional] = []
    for cp in prices[1:] if prices[0].constraint is None else prices:
        price = _price(cp.prices, source)
        constraint = cp.constraint
        if price is None or constraint is None:
            continue
        name = type(constraint).__name__
        if name == "StartDateConstraint":
            conditionals.append(Conditional(price, start_date=constraint.start_date))
        elif name == "TimeOfDateConstraint":
            window = (_utc(constraint.start_time), _utc(constraint.end_time))
            conditionals.append(Conditional(price, window=window))
    return SchedulePricing(base, conditionals)


def _utc(t: Any) -> Any:
    """A library time of day (naive = UTC) as a naive UTC time."""
    if t.tzinfo is None:
        return t
    from datetime import UTC, datetime

    return datetime.combine(datetime(2000, 1, 1).date(), t).astimezone(UTC).time().replace(tzinfo=None)


def _num(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, Decimal | int | float):
        return float(value)
    base = getattr(value, "base", None)  # TieredPrices: the base tier
    return float(base) if base is not None else None


def _price(mp: Any, source: str) -> Price | None:
    tin, tout = _num(getattr(mp, "input_mtok", None)), _num(getattr(mp, "output_mtok", None))
    if tin is None or tout is None:
        return None  # e.g. an image or audio model priced per unit: not a chat price we can apply
    tiered = any(type(getattr(mp, k, None)).__name__ == "TieredPrices" for k in ("input_mtok", "output_mtok"))
    return Price.per_million(
        tin,
        tout,
        _num(getattr(mp, "cache_read_mtok", None)),
        _num(getattr(mp, "cache_write_mtok", None)),
        source + (" (base tier)" if tiered else ""),
    )
