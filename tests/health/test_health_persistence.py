"""Health survives a restart through the state backend (SPEC §5, §9): TTL, relabelling, bad records."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from modelpool.config.schema import PoolConfig
from modelpool.health import FailureKind, HealthRegistry, RouteState
from modelpool.state import SqliteBackend

SHANGHAI = ZoneInfo("Asia/Shanghai")
T0 = datetime(2025, 6, 10, 10, 0, tzinfo=SHANGHAI).timestamp()
DAY = 86400.0
POOL = PoolConfig(cooldown=60, max_cooldown=1800, quota_cooldown=12 * 3600, quota_reset_hour=0)
ROUTE = "deepseek/deepseek-flash"


def _registry(backend: SqliteBackend | None = None, now: float = T0) -> HealthRegistry:
    if backend is None:
        return HealthRegistry(lambda: POOL, clock=lambda: now, tz=SHANGHAI)
    return HealthRegistry(
        lambda: POOL,
        clock=lambda: now,
        tz=SHANGHAI,
        persist=lambda key, record: backend.put("health", key, record),
        forget=lambda key: backend.delete("health", key),
    )


async def _stored(path: Path) -> dict[str, Any]:
    backend = SqliteBackend(path)
    try:
        return await backend.load("health")
    finally:
        await backend.close()


async def test_round_trip_through_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    backend = SqliteBackend(path)
    await backend.start()
    before = _registry(backend)
    before.record_success(ROUTE, ttft=0.2, tokens_per_s=100)
    before.record_failure(ROUTE, FailureKind.QUOTA, "429 insufficient balance", status=429)
    before.record_failure("other/m", FailureKind.SERVER, "503", status=503)
    await backend.close()

    after = _registry(now=T0 + 3600)
    assert after.load(await _stored(path), persist_ttl=DAY) == 2
    snap = after.snapshot(ROUTE)
    assert (snap.attempts, snap.successes, snap.failures, snap.consecutive_failures) == (2, 1, 1, 1)
    assert snap.last_error == "429 insufficient balance" and snap.last_status == 429
    assert snap.state is RouteState.UNAVAILABLE and snap.quota_rest
    assert snap.rest_until == before.snapshot(ROUTE).rest_until
    # latency stays in memory
    assert snap.samples == 0 and snap.ewma_ttft is None
    assert after.state("other/m") is RouteState.DEGRADED


async def test_reset_deletes_the_stored_record(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    backend = SqliteBackend(path)
    await backend.start()
    reg = _registry(backend)
    reg.record_failure(ROUTE, FailureKind.SERVER, "500")
    await backend.flush()
    reg.reset(ROUTE)
    await backend.close()
    assert await _stored(path) == {}


async def test_records_older_than_the_ttl_are_dropped(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    backend = SqliteBackend(path)
    await backend.start()
    _registry(backend).record_failure(ROUTE, FailureKind.SERVER, "500")
    await backend.close()
    records = await _stored(path)

    assert _registry(now=T0 + DAY - 1).load(records, persist_ttl=DAY) == 1
    assert _registry(now=T0 + DAY).load(records, persist_ttl=DAY) == 0
    assert _registry(now=T0 + 10).load(records, persist_ttl=0) == 0  # 0 disables persistence


def _record(**overrides: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "v": 1,
        "attempts": 3,
        "successes": 1,
        "failures": 2,
        "consecutive_failures": 2,
        "last_error": "boom",
        "last_error_kind": "unclassified",
        "last_status": None,
        "last_error_at": T0,
        "rest_until": T0 + 120,
        "last_success_at": T0 - 100,
        "updated_at": T0,
    }
    record.update(overrides)
    return record


def test_kind_is_rederived_and_a_relabelled_quota_wall_keeps_resting() -> None:
    # An older build stored this Chinese balance message as a plain rate limit with a short rest.
    stored = _record(last_error="请求失败：余额不足", last_error_kind="rate-limit", last_status=429)
    reg = _registry(now=T0 + 600)
    assert reg.load({ROUTE: stored}, persist_ttl=DAY) == 1
    snap = reg.snapshot(ROUTE)
    assert snap.last_error_kind is FailureKind.QUOTA
    assert snap.rest_until == datetime(2025, 6, 11, 0, 0, tzinfo=SHANGHAI).timestamp()
    assert snap.state is RouteState.UNAVAILABLE


def test_relabel_away_from_quota_uses_the_new_kinds_rest() -> None:
    stored = _record(last_error="503 service unavailable", last_error_kind="quota", rest_until=T0 + DAY)
    reg = _registry(now=T0 + 600)
    reg.load({ROUTE: stored}, persist_ttl=DAY)
    snap = reg.snapshot(ROUTE)
    assert snap.last_error_kind is FailureKind.SERVER
    assert snap.rest_until == T0 + 120  # 2 failures in a row: 60·2
    assert snap.state is RouteState.DEGRADED


def test_stored_network_failures_stay_network() -> None:
    stored = _record(last_error="ClientOSError: [Errno 104]", last_error_kind="network")
    reg = _registry(now=T0 + 10)
    reg.load({ROUTE: stored}, persist_ttl=DAY)
    assert reg.snapshot(ROUTE).last_error_kind is FailureKind.NETWORK
    assert reg.snapshot(ROUTE).rest_until == T0 + 120


@pytest.mark.parametrize(
    "bad",
    [
        "not a dict",
        None,
        [1, 2],
        _record(attempts="three"),
        _record(attempts=-1),
        _record(successes=9),
        _record(updated_at="yesterday"),
        _record(rest_until=float("inf")),
        _record(updated_at=None),
        _record(consecutive_failures=True),
    ],
)
def test_malformed_records_are_skipped(bad: object) -> None:
    reg = _registry(now=T0 + 10)
    assert reg.load({"bad/route": bad, ROUTE: _record()}, persist_ttl=DAY) == 1
    assert "bad/route" not in reg
    assert reg.state(ROUTE) is RouteState.UNAVAILABLE


def test_unknown_fields_and_kinds_are_tolerated() -> None:
    reg = _registry(now=T0 + 10)
    stored = _record(last_error="", last_error_kind="from-the-future", extra={"x": 1}, last_status="503")
    assert reg.load({ROUTE: stored}, persist_ttl=DAY) == 1
    snap = reg.snapshot(ROUTE)
    assert snap.last_error is None and snap.last_error_kind is None and snap.last_status is None


def test_load_does_not_overwrite_newer_live_state() -> None:
    reg = _registry(now=T0 + 10)
    reg.record_success(ROUTE)
    assert reg.load({ROUTE: _record()}, persist_ttl=DAY) == 0
    assert reg.state(ROUTE) is RouteState.OK


def test_load_ignores_a_non_mapping() -> None:
    assert _registry().load([], persist_ttl=DAY) == 0  # type: ignore[arg-type]
