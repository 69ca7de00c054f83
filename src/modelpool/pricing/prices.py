"""Prices and the cost of one attempt's usage (SPEC §14).

A `Price` holds USD per token (the config's USD per 1M tokens, divided once), so the cost of an attempt
is four multiplications on the call's path. A `RoutePricing` says which `Price` is in force at a moment:
one fixed price, a `{peak, off_peak}` pair decided by the period policy (§7), or a price library schedule
(time-of-day windows in UTC, start dates).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from typing import Any

from modelpool.config.prices import TokenPrices

PER_M = 1_000_000.0


@dataclass(frozen=True, slots=True)
class Price:
    """USD per token for fresh input, cached input (cache reads), cache writes and output."""

    input: float
    cached_input: float
    cache_write: float
    output: float
    source: str  # where it came from, for ranking reasons and `modelpool keys`/usage displays

    @classmethod
    def per_million(
        cls,
        input: float,
        output: float,
        cached_input: float | None = None,
        cache_write: float | None = None,
        source: str = "config",
    ) -> Price:
        # A provider that names no cache price bills cached input and cache writes as ordinary input.
        return cls(
            input / PER_M,
            (input if cached_input is None else cached_input) / PER_M,
            (input if cache_write is None else cache_write) / PER_M,
            output / PER_M,
            source,
        )

    @classmethod
    def from_config(cls, p: TokenPrices, source: str) -> Price:
        return cls.per_million(p.input, p.output, p.cached_input, p.cache_write, source)

    def cost(self, usage: Mapping[str, Any]) -> float:
        """USD for a normalized usage dict (protocols.mapping: prompt_tokens counts cached input and
        cache writes; cached_tokens and cache_creation_tokens say how much of it was which)."""
        prompt = usage.get("prompt_tokens") or 0
        cached = usage.get("cached_tokens") or 0
        written = usage.get("cache_creation_tokens") or 0
        fresh = prompt - cached - written
        return (
            (fresh if fresh > 0 else 0) * self.input
            + cached * self.cached_input
            + written * self.cache_write
            + (usage.get("completion_tokens") or 0) * self.output
        )

    def describe(self) -> dict[str, Any]:
        """USD per 1M tokens, as configured."""
        return {
            "input": round(self.input * PER_M, 6),
            "cached_input": round(self.cached_input * PER_M, 6),
            "cache_write": round(self.cache_write * PER_M, 6),
            "output": round(self.output * PER_M, 6),
            "source": self.source,
        }


class RoutePricing:
    """The prices of one route; `at(now, peak)` is the one in force (`peak` is read only by config
    period prices, so callers pass a thunk)."""

    __slots__ = ()

    def at(self, now: float, peak: Callable[[], bool]) -> Price:
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        raise NotImplementedError


class FixedPricing(RoutePricing):
    __slots__ = ("price",)

    def __init__(self, price: Price) -> None:
        self.price = price

    def at(self, now: float, peak: Callable[[], bool]) -> Price:
        return self.price

    def describe(self) -> dict[str, Any]:
        return {"kind": "fixed", "price": self.price.describe()}


class PeriodPricing(RoutePricing):
    """Config `{peak, off_peak}`: the period policy of SPEC §7 decides (working days, holidays, windows)."""

    __slots__ = ("off_peak", "peak")

    def __init__(self, peak: Price, off_peak: Price) -> None:
        self.peak, self.off_peak = peak, off_peak

    def at(self, now: float, peak: Callable[[], bool]) -> Price:
        return self.peak if peak() else self.off_peak

    def describe(self) -> dict[str, Any]:
        return {"kind": "period", "peak": self.peak.describe(), "off_peak": self.off_peak.describe()}


@dataclass(frozen=True, slots=True)
class Conditional:
    """One entry of a library schedule: in force from `start_date` (UTC date) and/or inside a daily UTC
    window `[start, end)` (which may wrap midnight)."""

    price: Price
    start_date: date | None = None
    window: tuple[time, time] | None = None

    def active(self, moment: datetime) -> bool:
        if self.start_date is not None and moment.date() < self.start_date:
            return False
        if self.window is not None:
            t, (start, end) = moment.time(), self.window
            if end < start:
                return t >= start or t < end
            return start <= t < end
        return True


class SchedulePricing(RoutePricing):
    """A price library's schedule: the base price, then conditionals; the last active one wins (the
    library's own rule)."""

    __slots__ = ("base", "conditionals")

    def __init__(self, base: Price, conditionals: Sequence[Conditional]) -> None:
        self.base = base
        self.conditionals = tuple(conditionals)

    def at(self, now: float, peak: Callable[[], bool]) -> Price:
        if not self.conditionals:
            return self.base
        moment = datetime.fromtimestamp(now, UTC)
        for c in reversed(self.conditionals):
            if c.active(moment):
                return c.price
        return self.base

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "schedule",
            "base": self.base.describe(),
            "conditionals": [
                {
                    "price": c.price.describe(),
                    "from": c.start_date.isoformat() if c.start_date else None,
                    "utc_window": f"{c.window[0]:%H:%M}-{c.window[1]:%H:%M}" if c.window else None,
                }
                for c in self.conditionals
            ],
        }
