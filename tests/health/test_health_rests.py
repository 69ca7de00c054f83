"""Rest lengths (SPEC §5): exponential backoff, the next-day quota rest, Retry-After."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from modelpool.config.schema import PoolConfig
from modelpool.health.classify import FailureKind
from modelpool.health.rests import exponential_rest, quota_rest_until, rest_horizon, rest_seconds

SHANGHAI = ZoneInfo("Asia/Shanghai")
BERLIN = ZoneInfo("Europe/Berlin")
H = 3600.0


@pytest.mark.parametrize(
    ("n", "expected"),
    [(0, 0.0), (-1, 0.0), (1, 60.0), (2, 120.0), (3, 240.0), (5, 960.0), (6, 1800.0), (50, 1800.0)],
)
def test_exponential_rest(n: int, expected: float) -> None:
    assert exponential_rest(n, 60.0, 1800.0) == expected


def test_exponential_rest_survives_huge_streaks() -> None:
    assert exponential_rest(100_000, 60.0, 1800.0) == 1800.0
    assert exponential_rest(3, 0.0, 1800.0) == 0.0


def _at(zone: ZoneInfo, year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=zone)


@pytest.mark.parametrize(
    ("now", "reset_hour", "floor", "expected"),
    [
        # 23:50 with a 12h floor pays the floor: 11:50 next day, not 00:00
        (_at(SHANGHAI, 2025, 6, 10, 23, 50), 0, 12 * H, _at(SHANGHAI, 2025, 6, 11, 11, 50)),
        # 00:05 does not revive the same evening: next midnight
        (_at(SHANGHAI, 2025, 6, 10, 0, 5), 0, 12 * H, _at(SHANGHAI, 2025, 6, 11, 0, 0)),
        # noon, floor 12h reaches exactly the next midnight
        (_at(SHANGHAI, 2025, 6, 10, 12, 0), 0, 12 * H, _at(SHANGHAI, 2025, 6, 11, 0, 0)),
        # a reset hour other than midnight, on the following day
        (_at(SHANGHAI, 2025, 6, 10, 3, 0), 8, 0, _at(SHANGHAI, 2025, 6, 11, 8, 0)),
        (_at(SHANGHAI, 2025, 6, 10, 9, 0), 8, 0, _at(SHANGHAI, 2025, 6, 11, 8, 0)),
        # month and year rollovers
        (_at(SHANGHAI, 2025, 1, 31, 10, 0), 0, 0, _at(SHANGHAI, 2025, 2, 1, 0, 0)),
        (_at(SHANGHAI, 2024, 2, 28, 10, 0), 0, 0, _at(SHANGHAI, 2024, 2, 29, 0, 0)),
        (_at(SHANGHAI, 2025, 12, 31, 23, 59), 0, 12 * H, _at(SHANGHAI, 2026, 1, 1, 11, 59)),
        # the floor is a ceiling-bounded 26h: longer than the next-day boundary
        (_at(SHANGHAI, 2025, 6, 10, 0, 5), 0, 26 * H, _at(SHANGHAI, 2025, 6, 11, 2, 5)),
    ],
)
def test_quota_rest_until(now: datetime, reset_hour: int, floor: float, expected: datetime) -> None:
    until = quota_rest_until(now, reset_hour, floor)
    assert until == expected
    assert until.tzinfo is now.tzinfo


def test_quota_floor_is_elapsed_time_across_dst_spring_forward() -> None:
    # Berlin springs forward on 2025-03-30 at 02:00 → 03:00: 12 elapsed hours end at 12:50 wall time.
    now = _at(BERLIN, 2025, 3, 29, 23, 50)
    until = quota_rest_until(now, 0, 12 * H)
    assert until.timestamp() - now.timestamp() == 12 * H
    assert (until.hour, until.minute) == (12, 50)


def test_quota_boundary_in_a_dst_gap_resolves_after_the_jump() -> None:
    # 02:00 does not exist on 2025-03-30 in Berlin; the route returns at the first instant after it.
    until = quota_rest_until(_at(BERLIN, 2025, 3, 29, 1, 0), 2, 0)
    assert until.astimezone(UTC) == datetime(2025, 3, 30, 1, 0, tzinfo=UTC)


def test_quota_boundary_across_dst_fall_back() -> None:
    # Berlin falls back on 2025-10-26; midnight of the 27th is 25 wall-clock hours after midnight of the 26th.
    now = _at(BERLIN, 2025, 10, 26, 0, 5)
    until = quota_rest_until(now, 0, 0)
    assert until == _at(BERLIN, 2025, 10, 27, 0, 0)
    assert until.timestamp() - now.timestamp() == pytest.approx(25 * H - 5 * 60)


def test_quota_rest_with_a_fixed_offset() -> None:
    tz = datetime.now(UTC).astimezone().tzinfo
    now = datetime(2025, 6, 10, 23, 50, tzinfo=tz)
    assert quota_rest_until(now, 0, 12 * H) - now == timedelta(hours=12)


POOL = PoolConfig(cooldown=60, max_cooldown=1800, quota_cooldown=12 * H, quota_reset_hour=0)


def test_rate_limit_rest_is_at_least_retry_after() -> None:
    assert rest_seconds(FailureKind.RATE_LIMIT, 1, POOL, retry_after=300) == 300
    assert rest_seconds(FailureKind.RATE_LIMIT, 1, POOL, retry_after=5) == 60
    assert rest_seconds(FailureKind.RATE_LIMIT, 3, POOL) == 240


def test_no_rest_for_failures_that_are_not_the_routes() -> None:
    assert rest_seconds(FailureKind.REQUEST, 3, POOL) == 0
    assert rest_horizon(FailureKind.CANCELLED, 3, POOL, 1000.0, SHANGHAI) == 0


def test_rest_horizon_for_quota_uses_the_calendar() -> None:
    now = _at(SHANGHAI, 2025, 6, 10, 0, 5)
    horizon = rest_horizon(FailureKind.QUOTA, 1, POOL, now.timestamp(), SHANGHAI)
    assert horizon == _at(SHANGHAI, 2025, 6, 11, 0, 0).timestamp()
    assert rest_horizon(FailureKind.SERVER, 2, POOL, 1000.0, SHANGHAI) == 1120.0
