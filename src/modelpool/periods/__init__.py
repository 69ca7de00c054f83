"""Peak / idle periods and the self-syncing Chinese statutory calendar (SPEC §7).

Routing reads `CalendarStore.policy(peak).provider_order(pool, now)` (synchronous, never the network);
the store keeps the calendar fresh in the background.
"""

from modelpool.periods.cache import CACHE_FILENAME, default_cache_path
from modelpool.periods.calendar_data import (
    Calendar,
    CalendarDataError,
    DayEntry,
    LoadedYear,
    YearDoc,
    YearInfo,
    build_calendar,
    calendar_from_docs,
    parse_year_doc,
)
from modelpool.periods.policy import MAX_LOOKAHEAD_DAYS, DayInfo, Period, PeriodPolicy, When, Window
from modelpool.periods.report import calendar_report, period_report
from modelpool.periods.sources import (
    JSDELIVR_TEMPLATE,
    RAW_GITHUB_TEMPLATE,
    Fetch,
    Source,
    fetching_enabled,
    sources_for,
)
from modelpool.periods.sync import CalendarStore

__all__ = [
    "CACHE_FILENAME",
    "JSDELIVR_TEMPLATE",
    "MAX_LOOKAHEAD_DAYS",
    "RAW_GITHUB_TEMPLATE",
    "Calendar",
    "CalendarDataError",
    "CalendarStore",
    "DayEntry",
    "DayInfo",
    "Fetch",
    "LoadedYear",
    "Period",
    "PeriodPolicy",
    "Source",
    "When",
    "Window",
    "YearDoc",
    "YearInfo",
    "build_calendar",
    "calendar_from_docs",
    "calendar_report",
    "default_cache_path",
    "fetching_enabled",
    "parse_year_doc",
    "period_report",
    "sources_for",
]
