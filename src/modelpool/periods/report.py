"""The answers behind `modelpool period [--at ISO8601]`, `modelpool calendar` and their admin endpoints."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from modelpool.periods.policy import PeriodPolicy
from modelpool.periods.sync import CalendarStore


def period_report(policy: PeriodPolicy, at: datetime | None = None) -> dict[str, Any]:
    """Peak/idle at `at` (now when None; naive = wall time in `peak.time_zone`), the local time, why,
    the next flip and warnings. JSON-safe."""
    try:
        report = policy.explain(at)
    except OverflowError:
        # A moment at the calendar's ends (year 1, year 9999 with a far offset) cannot be shifted into
        # the peak time zone or searched for its next flip; found by fuzzing /admin/period (was a 500).
        raise ValueError(f"{at.isoformat() if at else 'now'} is outside the supported date range") from None
    report["at"] = at.isoformat() if at is not None else None
    return report


def calendar_report(store: CalendarStore, today: date | None = None) -> dict[str, Any]:
    """The current year's calendar status, plus a summary of every loaded year (routing's lookahead
    crosses New Year, so those stay in the payload; people read the current-year block)."""
    report = store.status(today)
    report["years"] = {
        str(y): {
            "published": info.published,
            "holidays": info.holidays_count,
            "makeup_workdays": info.makeup_count,
            "source": info.source,
            "papers": list(info.papers),
        }
        for y, info in sorted(store.calendar.years.items())
    }
    return report
