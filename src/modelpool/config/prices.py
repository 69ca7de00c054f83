"""Config keys of SPEC §14: prices per route (and period) and client keys with limits.

Kept apart from `schema.py` (which only references these models) so the feature reads in one place.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class TokenPrices(_Model):
    """USD per 1M tokens. Cached input and cache writes default to the input price (what a provider that
    names no cache price bills them as); input and output must be given."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(default=None, ge=0)
    cache_write: float | None = Field(default=None, ge=0)


class PeriodPrices(_Model):
    """Prices per period of SPEC §7 (peak windows, working days, the statutory calendar)."""

    peak: TokenPrices
    off_peak: TokenPrices


class PriceSource(_Model):
    """`prices: {source: off}` turns the price library off (for a provider, or everywhere at top level)."""

    source: Literal["genai-prices", "off"] = "genai-prices"

    @field_validator("source", mode="before")
    @classmethod
    def _yaml_off(cls, v: Any) -> Any:
        return "off" if v is False else v


PricesConfig = TokenPrices | PeriodPrices | PriceSource


class Budget(_Model):
    usd: float = Field(gt=0)
    per: Literal["day", "month", "total"] = "day"


class ClientKeyConfig(_Model):
    """A client key with a name and limits (a plain string in `server.api_keys` has none)."""

    key: str = Field(min_length=1)
    name: str | None = None
    budget: Budget | None = None
    rpm: int | None = Field(default=None, gt=0)
    tpm: int | None = Field(default=None, gt=0)
    pools: list[str] | None = None  # globs; None = every pool


ApiKey = str | ClientKeyConfig


def key_secret(entry: ApiKey) -> str:
    return entry if isinstance(entry, str) else entry.key
