"""`pool.hedge` and `pool.speed` (SPEC §3.7): when a second attempt races a slow first one, and how the
speed strategies re-measure a route left behind. Kept apart from `schema` like `prices`: the pool section
reads them, nothing else in the schema does."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, field_validator

from modelpool.config.units import parse_duration

Duration = Annotated[float, BeforeValidator(parse_duration)]

__all__ = ["HedgeConfig", "SpeedConfig"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def _parse_after(value: Any) -> str | float:
    """`pool.hedge.after`: a duration (`2s`) or `pNN` (a percentile of the route's own recent TTFT)."""
    if isinstance(value, str) and re.fullmatch(r"[pP](\d{1,2}(\.\d+)?)", value.strip()):
        pct = float(value.strip()[1:])
        if not 0 < pct < 100:
            raise ValueError("hedge.after as a percentile is p1..p99")
        return value.strip().lower()
    return parse_duration(value)


def _parse_share(value: Any) -> float:
    """`5%` → 0.05; a plain number ≤ 1 is a share, > 1 a percentage."""
    if isinstance(value, str) and value.strip().endswith("%"):
        value = float(value.strip()[:-1]) / 100
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError("a share is a percentage like '5%' or a number between 0 and 1")
    share = float(value)
    share = share / 100 if share > 1 else share
    if not 0 <= share <= 1:
        raise ValueError("a share is between 0% and 100%")
    return share


class HedgeConfig(_Model):
    """SPEC §3.7: a second attempt when the first has produced no first event by `after`."""

    enabled: bool = False
    after: Annotated[str | float, BeforeValidator(_parse_after)] = "p95"
    min_delay: Duration = 0.25
    max_delay: Duration = 10.0
    budget: Annotated[float, BeforeValidator(_parse_share)] = 0.05

    @field_validator("max_delay")
    @classmethod
    def _ordered(cls, v: float, info: Any) -> float:
        low = info.data.get("min_delay", 0.0)
        if v < low:
            raise ValueError("hedge.max_delay must not be below min_delay")
        return v


class SpeedConfig(_Model):
    """How the speed strategies (`fastest`, `throughput`, `score`) re-measure a route left behind: every
    1/`explore`-th call of a pool puts first the route whose newest own sample is the oldest, once older
    than `explore_after` — real traffic, never a paid probe (`explore: 0` turns it off)."""

    explore: Annotated[float, BeforeValidator(_parse_share)] = 0.10
    explore_after: Duration = 20.0
