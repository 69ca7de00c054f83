"""holiday-cn year documents and the date-indexed Calendar."""

from __future__ import annotations

from datetime import date

import pytest
from periods_helpers import SNAPSHOT_YEARS, bj, policy, raw_doc, snapshot_calendar

from modelpool.periods import CalendarDataError, YearDoc, calendar_from_docs, parse_year_doc


@pytest.mark.parametrize("year", SNAPSHOT_YEARS)
def test_snapshot_documents_parse(year: int) -> None:
    raw = raw_doc(year)
    doc = parse_year_doc(raw, year=year)
    assert doc.year == year
    assert doc.holidays_count + doc.makeup_count == len(raw["days"])
    assert doc.published == bool(raw["days"])


def test_2027_is_the_unpublished_placeholder() -> None:
    doc = parse_year_doc(raw_doc(2027), year=2027)
    assert not doc.published and doc.papers == ()
    info = snapshot_calendar().year(2027)
    assert info is not None and not info.published and info.holidays_count == 0


def test_2026_counts_and_papers() -> None:
    raw = raw_doc(2026)
    info = snapshot_calendar().year(2026)
    assert info is not None and info.published
    assert info.papers == tuple(raw["papers"])
    assert info.holidays_count == sum(1 for d in raw["days"] if d["isOffDay"])
    assert info.makeup_count == sum(1 for d in raw["days"] if not d["isOffDay"])


@pytest.mark.parametrize(
    "raw, message",
    [
        ([], "JSON object"),
        ({"papers": [], "days": []}, "year"),
        ({"year": 2026, "papers": [], "days": []}, "expected 2025"),
        ({"year": 2025, "papers": "x", "days": []}, "papers"),
        ({"year": 2025, "papers": []}, "days"),
        ({"year": 2025, "days": [{"name": "x", "date": "2025-13-01", "isOffDay": True}]}, "invalid date"),
        ({"year": 2025, "days": [{"name": "x", "date": "2025-01-01", "isOffDay": "yes"}]}, "day entry"),
    ],
)
def test_invalid_documents_are_rejected(raw: object, message: str) -> None:
    with pytest.raises(CalendarDataError, match=message):
        parse_year_doc(raw, year=2025)


def test_round_trip_through_json() -> None:
    doc = parse_year_doc(raw_doc(2025))
    assert parse_year_doc(doc.to_json()) == doc


def test_a_notice_governing_late_december_of_the_previous_year_is_indexed_by_date() -> None:
    # The 2008 notice, for instance, set 2007-12-29 as a make-up day and 2007-12-30/31 as holidays.
    notice = parse_year_doc(
        {
            "year": 2031,
            "papers": [],
            "days": [
                {"name": "元旦", "date": "2030-12-28", "isOffDay": False},
                {"name": "元旦", "date": "2030-12-30", "isOffDay": True},
                {"name": "元旦", "date": "2030-12-31", "isOffDay": True},
                {"name": "元旦", "date": "2031-01-01", "isOffDay": True},
            ],
        }
    )
    cal = calendar_from_docs([YearDoc(2030), notice])
    assert cal.holidays[date(2030, 12, 30)] == "元旦"
    assert cal.makeup[date(2030, 12, 28)] == "元旦"
    p = policy(cal)
    assert p.is_working_day(date(2030, 12, 28))  # a Saturday, made a workday by next year's notice
    assert not p.is_working_day(date(2030, 12, 30))  # a Monday
    # Friday 27 Dec 19:00 → the make-up Saturday 28 Dec 09:00 (not Monday 30, not the weekday rule).
    assert p.next_flip(bj(2030, 12, 27, 19)) == bj(2030, 12, 28, 9)


def test_a_later_notice_names_a_date_listed_twice() -> None:
    early = parse_year_doc({"year": 2030, "days": [{"name": "old", "date": "2030-12-31", "isOffDay": True}]})
    late = parse_year_doc({"year": 2031, "days": [{"name": "元旦", "date": "2030-12-31", "isOffDay": True}]})
    assert calendar_from_docs([late, early]).holidays[date(2030, 12, 31)] == "元旦"


def test_calendar_maps_are_read_only() -> None:
    cal = snapshot_calendar()
    with pytest.raises(TypeError):
        cal.holidays[date(2030, 1, 1)] = "x"  # type: ignore[index]
