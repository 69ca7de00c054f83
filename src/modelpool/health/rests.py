"""How long a failed route sits out (SPEC §5).

Every kind rests on an exponential backoff except `quota`: a balance does not refill in minutes, so a
quota wall rests until `quota_reset_hour` of the following local day and never less than
`quota_cooldown`. A rate limit rests at least as long as the upstream's `Retry-After` asks.
"""

from __future__ import annotations

import logging
import os
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from modelpool.config.schema import PoolConfig
from modelpool.health.classify import FailureKind, counts_against_route

log = logging.getLogger(__name__)

# 2**60 × any sane base is far beyond any cap; bounding the exponent keeps float math from overflowing
# after a route has failed thousands of times in a row.
_MAX_EXPONENT = 60


def exponential_rest(failures_in_a_row: int, base: float, cap: float) -> float:
    """`base·2^(n-1)` seconds, clamped to `[0, cap]`; no failures means no rest."""
    if failures_in_a_row <= 0 or base <= 0:
        return 0.0
    rest = base * 2.0 ** min(failures_in_a_row - 1, _MAX_EXPONENT)
    return max(0.0, min(rest, cap))


def quota_rest_until(now: datetime, reset_hour: int, floor_seconds: float) -> datetime:
    """When a route that hit a quota wall at `now` may be tried again.

    The following local day at `reset_hour` — a wall at 00:05 does not revive the same evening — and
    never sooner than `floor_seconds` after the wall, counted in elapsed time (a wall at 23:50 with a 12h
    floor returns at 11:50). Arithmetic runs on absolute instants so DST transitions cannot shift it.
    """
    if now.tzinfo is None:
        now = now.astimezone()  # a naive time is the machine's local time
    zone = now.tzinfo
    if zone is None:  # unreachable after astimezone(); narrows the type
        zone = UTC
    next_day = now.date() + timedelta(days=1)
    boundary = _wall_time(next_day, reset_hour, zone)
    floor = now.astimezone(UTC) + timedelta(seconds=max(0.0, floor_seconds))
    # Compare instants, not wall times: same-tzinfo datetimes compare naively in Python.
    until = max(boundary.astimezone(UTC), floor)
    return until.astimezone(zone)


def _wall_time(day: date, hour: int, zone: tzinfo) -> datetime:
    """`hour:00` local on `day`; a time skipped by a DST jump resolves to the instant after the jump."""
    local = datetime.combine(day, time(hour), tzinfo=zone)
    # Round-trip through UTC normalises non-existent wall times (zoneinfo reads them with fold=0).
    return local.astimezone(UTC).astimezone(zone)


def rest_seconds(
    kind: FailureKind,
    failures_in_a_row: int,
    pool: PoolConfig,
    retry_after: float | None = None,
) -> float:
    """Rest length for every kind except `quota`, whose rest is a calendar horizon (`quota_rest_until`)."""
    if not counts_against_route(kind):
        return 0.0
    rest = exponential_rest(failures_in_a_row, pool.cooldown, pool.max_cooldown)
    if retry_after is not None and retry_after > 0:
        # Retry-After is the upstream's own statement; honour it for any kind that carries it.
        rest = max(rest, retry_after)
    return rest


def rest_horizon(
    kind: FailureKind,
    failures_in_a_row: int,
    pool: PoolConfig,
    now: float,
    zone: tzinfo,
    retry_after: float | None = None,
) -> float:
    """Epoch seconds until which a route rests after a failure of `kind` at epoch `now`."""
    if kind == FailureKind.QUOTA:
        wall = datetime.fromtimestamp(now, zone)
        return quota_rest_until(wall, pool.quota_reset_hour, pool.quota_cooldown).timestamp()
    rest = rest_seconds(kind, failures_in_a_row, pool, retry_after)
    return now + rest if rest > 0 else 0.0


def local_zone() -> tzinfo:
    """The machine's time zone as a DST-aware zone when it can be found, else its current fixed offset."""
    key = os.environ.get("TZ", "").lstrip(":")
    if key:
        try:
            return ZoneInfo(key)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            log.debug("TZ=%r is not a known zone; falling back to the system zone", key)
    localtime = Path("/etc/localtime")
    try:
        with localtime.open("rb") as fh:
            return ZoneInfo.from_file(fh, key="localtime")
    except (OSError, ValueError):
        pass
    fallback = datetime.now().astimezone().tzinfo
    return fallback if fallback is not None else UTC
