"""Peak / idle over the statutory calendar (SPEC §7) with the data snapshot."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import orjson
import pytest
from periods_helpers import bj, days_of, policy

from modelpool.config.schema import HolidaysConfig, PoolConfig
from modelpool.periods import Calendar, calendar_from_docs, parse_year_doc, period_report

# ── statutory holidays and make-up days (2026 file) ───────────────────────────────────────────────


def test_national_day_2026_is_idle_all_day() -> None:
    p = policy()
    national = days_of(2026, off=True, name="国庆节")
    assert date(2026, 10, 1) in national and len(national) >= 7
    for d in national:
        for hour in (9, 10, 15, 17):
            period = p.period_at(bj(d.year, d.month, d.day, hour))
            assert not period.peak, d
            assert period.reason == "statutory holiday: 国庆节"


def test_spring_festival_2026_is_idle_all_day() -> None:
    p = policy()
    spring = days_of(2026, off=True, name="春节")
    weekdays_in_it = [d for d in spring if d.isoweekday() <= 5]
    assert weekdays_in_it, "the Spring Festival break covers working weekdays"
    for d in spring:
        assert not p.is_working_day(d)
        assert not p.is_peak(bj(d.year, d.month, d.day, 10))


def test_2026_makeup_saturdays_are_peak_inside_windows_only() -> None:
    p = policy()
    makeup_saturdays = [d for d in days_of(2026, off=False) if d.isoweekday() == 6]
    assert makeup_saturdays, "the 2026 file has make-up Saturdays"
    for d in makeup_saturdays:
        y, m, dd = d.year, d.month, d.day
        assert p.is_peak(bj(y, m, dd, 10)) and p.is_peak(bj(y, m, dd, 15)), d
        assert not p.is_peak(bj(y, m, dd, 12, 30)) and not p.is_peak(bj(y, m, dd, 19)), d
        assert p.period_at(bj(y, m, dd, 10)).reason.startswith("make-up workday (")


def test_ordinary_2026_saturdays_are_idle() -> None:
    p = policy()
    listed = set(days_of(2026, off=False)) | set(days_of(2026, off=True))
    d = date(2026, 1, 3)
    while d.year == 2026:
        if d not in listed:
            period = p.period_at(bj(d.year, d.month, d.day, 10))
            assert not period.peak and period.reason == "weekend (Saturday)", d
        d += timedelta(days=7)


def test_makeup_sunday_is_peak() -> None:
    # 2026-01-04 is a Sunday the 元旦 notice made a workday.
    assert date(2026, 1, 4) in days_of(2026, off=False)
    assert policy().is_peak(bj(2026, 1, 4, 9))


# ── windows ───────────────────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    "hh, mm, peak",
    [
        (8, 59, False),
        (9, 0, True),
        (11, 59, True),
        (12, 0, False),
        (13, 59, False),
        (14, 0, True),
        (18, 0, False),
    ],
)
def test_default_windows_on_an_ordinary_tuesday(hh: int, mm: int, peak: bool) -> None:
    assert policy().is_peak(bj(2026, 3, 10, hh, mm)) is peak


def test_24_00_is_a_valid_end() -> None:
    p = policy(windows=["20:00-24:00"], weekdays=[1, 2, 3, 4, 5, 6, 7])
    assert p.is_peak(bj(2026, 3, 10, 23, 59, 59, 999999))
    assert p.next_flip(bj(2026, 3, 10, 21)) == bj(2026, 3, 11, 0)
    assert not p.is_peak(bj(2026, 3, 11, 0))


def test_back_to_back_windows_across_midnight_do_not_flip_at_midnight() -> None:
    p = policy(windows=["20:00-24:00", "00:00-08:00"], weekdays=[1, 2])
    # Monday 2026-03-09 21:00 is peak through Tuesday 08:00; midnight changes nothing.
    assert p.next_flip(bj(2026, 3, 9, 21)) == bj(2026, 3, 10, 8)
    # Tuesday 21:00 runs to midnight: Wednesday is not a peak weekday.
    assert p.next_flip(bj(2026, 3, 10, 21)) == bj(2026, 3, 11, 0)


def test_whole_day_window() -> None:
    p = policy(windows=["00:00-24:00"])
    assert p.next_flip(bj(2026, 3, 13, 12)) == bj(2026, 3, 14, 0)  # Friday noon → Saturday midnight
    assert p.next_flip(bj(2026, 3, 14, 12)) == bj(2026, 3, 16, 0)  # Saturday → Monday midnight


# ── next flip ─────────────────────────────────────────────────────────────────────────────────────


def test_friday_evening_reports_monday_0900() -> None:
    p = policy()
    flip = p.next_flip(bj(2026, 3, 13, 19))  # an ordinary Friday
    assert flip == bj(2026, 3, 16, 9)
    assert flip is not None and flip.tzinfo == ZoneInfo("Asia/Shanghai")


def test_flips_within_a_working_day() -> None:
    p = policy()
    assert p.next_flip(bj(2026, 3, 10, 8)) == bj(2026, 3, 10, 9)
    assert p.next_flip(bj(2026, 3, 10, 9)) == bj(2026, 3, 10, 12)  # at an edge: the next change
    assert p.next_flip(bj(2026, 3, 10, 12, 30)) == bj(2026, 3, 10, 14)
    assert p.next_flip(bj(2026, 3, 10, 16)) == bj(2026, 3, 10, 18)


def test_flip_across_the_national_day_week_lands_on_its_first_working_day() -> None:
    p = policy()
    national = sorted(days_of(2026, off=True, name="国庆节"))
    first_working = national[-1] + timedelta(days=1)
    while not p.is_working_day(first_working):
        first_working += timedelta(days=1)
    assert first_working == date(2026, 10, 8)
    expected = bj(2026, 10, 8, 9)
    assert p.next_flip(bj(2026, 9, 30, 19)) == expected
    assert p.next_flip(bj(2026, 10, 3, 10)) == expected


def test_flip_across_spring_festival_lands_on_the_makeup_saturday() -> None:
    # 2026-02-14 (Saturday) is a make-up day before the break: a Friday evening reports it.
    assert policy().next_flip(bj(2026, 2, 13, 19)) == bj(2026, 2, 14, 9)


def test_flip_across_the_year_end() -> None:
    p = policy()
    # 2025-12-31 evening → 2026-01-01..03 are 元旦 holidays → the make-up Sunday 2026-01-04.
    assert p.next_flip(bj(2025, 12, 31, 19)) == bj(2026, 1, 4, 9)
    # 2027 is not published: its New Year's Day follows the weekday rule (a Friday) — conservative.
    assert p.next_flip(bj(2026, 12, 31, 19)) == bj(2027, 1, 1, 9)


def test_no_flip_when_the_period_never_changes() -> None:
    assert policy(windows=[]).next_flip(bj(2026, 3, 10, 10)) is None
    assert policy(enabled=False).next_flip(bj(2026, 3, 10, 10)) is None
    assert policy(Calendar.empty(), weekdays=[]).next_flip(bj(2026, 3, 10, 10)) is None
    # With no peak weekdays the fetched make-up days are still working days, so the period does flip.
    assert policy(weekdays=[]).next_flip(bj(2026, 3, 10, 10)) == bj(2026, 5, 9, 9)
    always = policy(Calendar.empty(), windows=["00:00-24:00"], weekdays=[1, 2, 3, 4, 5, 6, 7])
    assert always.next_flip(bj(2026, 3, 10, 10)) is None


def test_next_flip_follows_the_time_zone_through_dst() -> None:
    # US DST starts Sunday 2026-03-08: Friday 19:00 EST → Monday 09:00 EDT.
    ny = ZoneInfo("America/New_York")
    p = policy(Calendar.empty(), time_zone="America/New_York")
    flip = p.next_flip(datetime(2026, 3, 6, 19, tzinfo=ny))
    assert flip == datetime(2026, 3, 9, 9, tzinfo=ny)
    assert flip is not None and flip.utcoffset() == timedelta(hours=-4)


# ── the calendar switches ─────────────────────────────────────────────────────────────────────────


def _both(d: str) -> Calendar:
    return calendar_from_docs(
        [
            parse_year_doc(
                {
                    "year": 2026,
                    "days": [
                        {"name": "假日", "date": d, "isOffDay": True},
                        {"name": "调休", "date": d, "isOffDay": False},
                    ],
                }
            )
        ]
    )


def test_a_holiday_beats_a_makeup_day() -> None:
    p = policy(_both("2026-03-14"))  # a Saturday listed as both
    info = p.day_info(date(2026, 3, 14))
    assert info.kind == "holiday" and not info.working and info.makeup == "调休"
    assert not p.is_peak(bj(2026, 3, 14, 10))


def test_override_beats_a_fetched_makeup_day_and_warns() -> None:
    p = policy(holidays=HolidaysConfig(override=["2026-02-14"]))
    assert not p.is_peak(bj(2026, 2, 14, 10))
    warnings = p.explain(bj(2026, 2, 14, 10))["warnings"]
    assert any("make-up workday" in w and "holiday wins" in w for w in warnings)


def test_override_adds_an_idle_date() -> None:
    p = policy(holidays=HolidaysConfig(override=["2026-03-11"]))  # an ordinary Wednesday
    period = p.period_at(bj(2026, 3, 11, 10))
    assert not period.peak and period.reason == "holiday (holidays.override)"
    assert p.next_flip(bj(2026, 3, 10, 19)) == bj(2026, 3, 12, 9)


def test_manual_makeup_workday_is_peak_inside_windows() -> None:
    p = policy(makeup_workdays=["2026-03-14"])  # an ordinary Saturday
    assert p.is_peak(bj(2026, 3, 14, 10))
    assert (
        p.period_at(bj(2026, 3, 14, 10)).reason
        == "make-up workday (peak.makeup_workdays), inside window 09:00-12:00"
    )
    assert p.next_flip(bj(2026, 3, 13, 19)) == bj(2026, 3, 14, 9)


@pytest.mark.parametrize("holidays", [HolidaysConfig(sync=False), HolidaysConfig(source="off")])
def test_calendar_off_ignores_fetched_dates_but_keeps_the_manual_lists(holidays: HolidaysConfig) -> None:
    p = policy(
        holidays=holidays.model_copy(update={"override": ["2026-03-11"]}), makeup_workdays=["2026-03-14"]
    )
    assert not p.uses_fetched
    assert p.is_peak(bj(2026, 10, 1, 10))  # National Day is a plain Thursday now
    assert not p.is_peak(bj(2026, 2, 14, 10))  # the fetched make-up Saturday is a plain Saturday
    assert not p.is_peak(bj(2026, 3, 11, 10))  # override still idles
    assert p.is_peak(bj(2026, 3, 14, 10))  # manual make-up still works
    assert not any("calendar" in w for w in p.explain(bj(2026, 3, 10, 10))["warnings"])


def test_yaml_off_source_is_off() -> None:
    assert not policy(holidays=HolidaysConfig.model_validate({"source": False})).uses_fetched


def test_peak_disabled_is_always_idle() -> None:
    p = policy(enabled=False)
    period = p.period_at(bj(2026, 3, 10, 10))
    assert not period.peak and "disabled" in period.reason
    assert p.cost_period(bj(2026, 3, 10, 10)) == "off_peak"


# ── time handling ─────────────────────────────────────────────────────────────────────────────────


def test_aware_times_are_read_in_the_policy_zone() -> None:
    p = policy()
    at = datetime(2026, 3, 10, 1, 30, tzinfo=UTC)  # 09:30 in Beijing
    period = p.period_at(at)
    assert period.peak and period.local == bj(2026, 3, 10, 9, 30)


def test_naive_times_are_wall_time_in_the_policy_zone() -> None:
    assert policy().period_at(datetime(2026, 3, 10, 9, 30)).local == bj(2026, 3, 10, 9, 30)


def test_epoch_seconds_are_accepted() -> None:
    # The planner's clock is time.time(); the policy reads it directly.
    assert policy().period_at(bj(2026, 3, 10, 9, 30).timestamp()).local == bj(2026, 3, 10, 9, 30)
    assert policy().is_peak(bj(2026, 10, 1, 10).timestamp()) is False


def test_now_is_the_default() -> None:
    p = policy()
    assert p.period_at().local.tzinfo == ZoneInfo("Asia/Shanghai")
    assert p.cost_period() in ("peak", "off_peak")


# ── the overlay ───────────────────────────────────────────────────────────────────────────────────


def test_provider_order_overlay_with_inherit_on_empty() -> None:
    pool = PoolConfig(provider_order=["a", "b", "c"])
    p = policy(peak_provider_order=["b"], off_peak_provider_order=["c", "a"])
    assert p.provider_order(pool, bj(2026, 3, 10, 10)) == ["b"]
    assert p.provider_order(pool, bj(2026, 3, 10, 20)) == ["c", "a"]
    assert p.provider_order_with_source(pool, bj(2026, 10, 1, 10)) == (
        ["c", "a"],
        "peak.off_peak_provider_order",
    )

    inherit = policy(peak_provider_order=["b"])
    assert inherit.provider_order_with_source(pool, bj(2026, 3, 10, 20)) == (
        ["a", "b", "c"],
        "pool.provider_order",
    )
    assert policy().provider_order(pool, bj(2026, 3, 10, 10)) == ["a", "b", "c"]
    assert policy().provider_order(PoolConfig(), bj(2026, 3, 10, 10)) == []


def test_disabled_overlay_uses_the_pool_order_in_every_period() -> None:
    pool = PoolConfig(provider_order=["a"])
    p = policy(enabled=False, peak_provider_order=["b"], off_peak_provider_order=["c"])
    assert p.provider_order_with_source(pool, bj(2026, 3, 10, 20)) == (["a"], "pool.provider_order")


def test_the_overlay_does_not_alias_config_lists() -> None:
    pool = PoolConfig(provider_order=["a"])
    policy().provider_order(pool, bj(2026, 3, 10, 10)).append("x")
    assert pool.provider_order == ["a"]


def test_cost_period() -> None:
    p = policy()
    assert p.cost_period(bj(2026, 3, 10, 10)) == "peak"
    assert p.cost_period(bj(2026, 3, 10, 12, 30)) == "off_peak"
    assert p.cost_period(bj(2026, 10, 1, 10)) == "off_peak"


# ── explain / period report ───────────────────────────────────────────────────────────────────────


def test_explain_a_friday_evening() -> None:
    report = period_report(policy(), bj(2026, 3, 13, 19))
    assert report["period"] == "idle" and report["peak"] is False
    assert report["local_date"] == "2026-03-13" and report["local_time"] == "19:00:00"
    assert report["weekday"] == 5 and report["weekday_name"] == "Friday"
    assert report["windows"] == ["09:00-12:00", "14:00-18:00"]
    assert report["why"] == "working day, outside the peak windows"
    assert report["next_flip"] == "2026-03-16T09:00:00+08:00" and report["next_period"] == "peak"
    assert report["warnings"] == []
    orjson.dumps(report)  # JSON-safe for --json and the admin API


def test_explain_warns_on_a_statutory_holiday() -> None:
    report = policy().explain(bj(2026, 10, 1, 10))
    assert report["day_kind"] == "holiday" and report["holiday"] == "国庆节"
    assert report["warnings"] == ["2026-10-01 is a statutory holiday (国庆节): idle all day"]


def test_explain_a_makeup_day_in_force_has_no_warning() -> None:
    report = policy().explain(bj(2026, 2, 14, 10))
    assert report["period"] == "peak" and report["day_kind"] == "makeup" and report["makeup"] == "春节"
    assert report["warnings"] == []


@pytest.mark.parametrize(
    "peak, reason",
    [({"enabled": False}, "peak periods are disabled"), ({"windows": []}, "no peak windows are configured")],
)
def test_explain_warns_on_a_makeup_day_treated_as_idle(peak: dict[str, Any], reason: str) -> None:
    report = policy(**peak).explain(bj(2026, 2, 14, 10))
    assert report["period"] == "idle"
    assert report["warnings"] == [f"2026-02-14 is a make-up workday (春节) but is treated as idle: {reason}"]


def test_explain_warns_on_an_unpublished_or_missing_year() -> None:
    unpublished = policy().explain(bj(2027, 3, 10, 10))["warnings"]
    assert unpublished == ["the 2027 arrangement is not published yet: following the weekday rule"]
    missing = policy(Calendar.empty()).explain(bj(2026, 3, 10, 10))["warnings"]
    assert missing == ["no statutory calendar loaded for 2026: following the weekday rule"]
