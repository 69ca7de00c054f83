"""Cross-check: `is_working_day` over the holiday-cn snapshot agrees with the `chinesecalendar` package
(an independently maintained table of the same State Council notices) on every day of 2024–2026.

Result when written (chinesecalendar 1.11.0, holiday-cn at d4e53bf): no disagreement on any of the
1096 days. 2027 is left out on purpose: holiday-cn has not published it and chinesecalendar 1.11.0
raises NotImplementedError for it, so there is nothing to compare.
"""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from periods_helpers import policy

try:
    import chinese_calendar
except ImportError:  # pragma: no cover - the test extras install it
    pytest.fail(
        "the chinesecalendar package is missing: pip install -e '.[test]' (or pip install chinesecalendar)",
        pytrace=False,
    )

# Real disagreements between the two datasets, with the reason, would be listed here as
# {date: "why"}; there are none for 2024–2026.
KNOWN_DISAGREEMENTS: dict[date, str] = {}


@pytest.mark.parametrize("year", [2024, 2025, 2026])
def test_is_working_day_agrees_with_chinesecalendar(year: int) -> None:
    p = policy()
    differ: list[tuple[date, bool, bool]] = []
    day = date(year, 1, 1)
    while day.year == year:
        ours, theirs = p.is_working_day(day), chinese_calendar.is_workday(day)
        if ours != theirs and day not in KNOWN_DISAGREEMENTS:
            differ.append((day, ours, theirs))
        day += timedelta(days=1)
    assert differ == [], f"modelpool vs chinesecalendar (date, ours, theirs): {differ}"


def test_holiday_names_agree_on_the_big_breaks() -> None:
    # chinesecalendar names holidays in English; spot-check the two long breaks of 2026.
    p = policy()
    on_holiday, detail = chinese_calendar.get_holiday_detail(date(2026, 10, 1))
    assert on_holiday and detail == chinese_calendar.Holiday.national_day.value
    assert p.holiday_name(date(2026, 10, 1)) == "国庆节"
    on_holiday, detail = chinese_calendar.get_holiday_detail(date(2026, 2, 17))
    assert on_holiday and detail == chinese_calendar.Holiday.spring_festival.value
    assert p.holiday_name(date(2026, 2, 17)) == "春节"
