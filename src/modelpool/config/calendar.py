"""`peak` and `holidays` (SPEC §7): the peak windows and the statutory calendar's sources. Kept apart from
`schema` like `prices`: only the period policy and the calendar sync read them."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["HolidaysConfig", "PeakConfig"]

_WINDOW_RE = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)-(([01]\d|2[0-3]):([0-5]\d)|24:00)$")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class PeakConfig(_Model):
    enabled: bool = True
    time_zone: str = "Asia/Shanghai"
    windows: list[str] = Field(default_factory=lambda: ["09:00-12:00", "14:00-18:00"])
    weekdays: list[int] = Field(default_factory=lambda: [1, 2, 3, 4, 5])
    makeup_workdays: list[str] = Field(default_factory=list)
    peak_provider_order: list[str] = Field(default_factory=list)
    off_peak_provider_order: list[str] = Field(default_factory=list)

    @field_validator("windows")
    @classmethod
    def _windows(cls, v: list[str]) -> list[str]:
        for w in v:
            m = _WINDOW_RE.match(w)
            if not m:
                raise ValueError(f"invalid window {w!r}: use 'HH:MM-HH:MM' (24:00 allowed as an end)")
            start, end = w.split("-")
            if end != "24:00" and end <= start:
                raise ValueError(f"window {w!r} ends before it starts")
        return v

    @field_validator("weekdays")
    @classmethod
    def _weekdays(cls, v: list[int]) -> list[int]:
        for d in v:
            if not 1 <= d <= 7:
                raise ValueError(f"weekday {d} is not an ISO weekday (1=Mon … 7=Sun)")
        return v

    @field_validator("time_zone")
    @classmethod
    def _tz(cls, v: str) -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(v)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {v!r}") from exc
        return v

    @field_validator("makeup_workdays", mode="before")
    @classmethod
    def _dates(cls, v: Any) -> Any:
        # Before-mode: YAML turns an unquoted 2025-09-28 into a datetime.date.
        return [_check_date(d) for d in v] if isinstance(v, list) else v


def _check_date(d: Any) -> str:
    import datetime as _dt

    s = d.isoformat() if isinstance(d, _dt.date) else str(d)
    try:
        _dt.date.fromisoformat(s)
    except ValueError as exc:
        raise ValueError(f"invalid date {d!r}: use YYYY-MM-DD") from exc
    return s


class HolidaysConfig(_Model):
    sync: bool = True
    source: str = "holiday-cn"
    url_template: str = ""
    cache_days: float = Field(default=30, ge=0)
    update_days: float = Field(default=7, gt=0)
    override: list[str] = Field(default_factory=list)

    @field_validator("override", mode="before")
    @classmethod
    def _dates(cls, v: Any) -> Any:
        return [_check_date(d) for d in v] if isinstance(v, list) else v

    @field_validator("source", mode="before")
    @classmethod
    def _yaml_off(cls, v: Any) -> Any:
        return "off" if v is False else v
