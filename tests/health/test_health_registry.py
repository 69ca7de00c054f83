"""The health registry (SPEC §5): states, counters, rests, latency window, listeners."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from modelpool.config.schema import PoolConfig
from modelpool.health import FailureKind, HealthRegistry, RouteHealth, RouteState

SHANGHAI = ZoneInfo("Asia/Shanghai")
T0 = datetime(2025, 6, 10, 10, 0, tzinfo=SHANGHAI).timestamp()
ROUTE = "deepseek/deepseek-flash"


class Clock:
    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def pool() -> PoolConfig:
    return PoolConfig(cooldown=60, max_cooldown=1800, quota_cooldown=12 * 3600, quota_reset_hour=0)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def reg(pool: PoolConfig, clock: Clock) -> HealthRegistry:
    return HealthRegistry(lambda: pool, clock=clock, tz=SHANGHAI)


def test_state_transitions(reg: HealthRegistry, clock: Clock) -> None:
    assert reg.state(ROUTE) is RouteState.UNKNOWN
    reg.record_success(ROUTE, ttft=0.5, tokens_per_s=80)
    assert reg.state(ROUTE) is RouteState.OK

    horizon = reg.record_failure(ROUTE, FailureKind.SERVER, "503")
    assert horizon == T0 + 60
    assert reg.state(ROUTE) is RouteState.UNAVAILABLE
    assert reg.is_resting(ROUTE)
    assert reg.rest_remaining(ROUTE) == 60

    clock.t += 61
    assert reg.state(ROUTE) is RouteState.DEGRADED
    assert not reg.is_resting(ROUTE)
    assert reg.rest_remaining(ROUTE) == 0

    reg.record_success(ROUTE, ttft=0.4, tokens_per_s=90)
    assert reg.state(ROUTE) is RouteState.OK
    reg.reset(ROUTE)
    assert reg.state(ROUTE) is RouteState.UNKNOWN
    assert ROUTE not in reg


def test_explicit_now_overrides_the_clock(reg: HealthRegistry) -> None:
    reg.record_failure(ROUTE, "network", "reset", now=1000.0)
    assert reg.state(ROUTE, now=1059.0) is RouteState.UNAVAILABLE
    assert reg.state(ROUTE, now=1060.0) is RouteState.DEGRADED


def test_exponential_backoff_grows_with_the_streak(reg: HealthRegistry, clock: Clock) -> None:
    rests = []
    for _ in range(7):
        rests.append(reg.record_failure(ROUTE, FailureKind.NETWORK, "timeout") - clock.t)
        clock.t += 4000  # past any rest, so the next horizon is not a max() with the previous one
    assert rests == [60, 120, 240, 480, 960, 1800, 1800]
    snap = reg.snapshot(ROUTE)
    assert (snap.attempts, snap.failures, snap.consecutive_failures) == (7, 7, 7)


def test_success_ends_a_rest_and_the_streak(reg: HealthRegistry) -> None:
    reg.record_failure(ROUTE, FailureKind.SERVER, "500")
    reg.record_failure(ROUTE, FailureKind.SERVER, "500")
    reg.record_success(ROUTE, None, None)
    snap = reg.snapshot(ROUTE)
    assert snap.consecutive_failures == 0 and snap.rest_until == 0 and snap.state is RouteState.OK
    # the next failure starts the backoff from the base again
    assert reg.record_failure(ROUTE, FailureKind.SERVER, "500") == T0 + 60


def test_quota_rests_until_next_day(reg: HealthRegistry, clock: Clock) -> None:
    clock.t = datetime(2025, 6, 10, 23, 50, tzinfo=SHANGHAI).timestamp()
    horizon = reg.record_failure(ROUTE, FailureKind.QUOTA, "429 insufficient balance", status=429)
    assert horizon == datetime(2025, 6, 11, 11, 50, tzinfo=SHANGHAI).timestamp()
    snap = reg.snapshot(ROUTE)
    assert snap.quota_rest and snap.last_error_kind is FailureKind.QUOTA and snap.last_status == 429


def test_a_later_short_rest_never_cuts_a_quota_rest(reg: HealthRegistry, clock: Clock) -> None:
    quota = reg.record_failure(ROUTE, FailureKind.QUOTA, "余额不足")
    clock.t += 10
    assert reg.record_failure(ROUTE, FailureKind.NETWORK, "reset") == quota
    assert reg.snapshot(ROUTE).last_error_kind is FailureKind.NETWORK


def test_rate_limit_honours_retry_after(reg: HealthRegistry) -> None:
    assert reg.record_failure(ROUTE, FailureKind.RATE_LIMIT, "429", retry_after=600) == T0 + 600


def test_live_config_applies_to_the_next_rest(pool: PoolConfig, clock: Clock) -> None:
    current = {"pool": pool}
    reg = HealthRegistry(lambda: current["pool"], clock=clock, tz=SHANGHAI)
    current["pool"] = pool.model_copy(update={"cooldown": 5.0})
    assert reg.record_failure(ROUTE, FailureKind.SERVER, "500") == T0 + 5


@pytest.mark.parametrize("kind", [FailureKind.REQUEST, FailureKind.CANCELLED, "request"])
def test_client_side_failures_do_not_count(reg: HealthRegistry, kind: FailureKind) -> None:
    assert reg.record_failure(ROUTE, kind, "messages: field required") == 0.0
    assert reg.state(ROUTE) is RouteState.UNKNOWN
    reg.record_success(ROUTE)
    assert reg.record_failure(ROUTE, kind, "x") == 0.0
    snap = reg.snapshot(ROUTE)
    assert (snap.attempts, snap.failures, snap.state) == (1, 0, RouteState.OK)


def test_object_payload_is_stored_readably(reg: HealthRegistry) -> None:
    reg.record_failure(ROUTE, FailureKind.QUOTA, {"error": {"message": "余额不足"}})
    assert reg.snapshot(ROUTE).last_error == '{"error":{"message":"余额不足"}}'


def test_latency_window_medians_and_ewma(reg: HealthRegistry) -> None:
    reg.record_success(ROUTE, ttft=1.0, tokens_per_s=10)
    reg.record_success(ROUTE, ttft=2.0, tokens_per_s=30)
    snap = reg.snapshot(ROUTE)
    assert snap.ewma_ttft == pytest.approx(0.3 * 2.0 + 0.7 * 1.0)
    assert snap.median_ttft == 1.5 and snap.median_tps == 20
    for i in range(30):
        reg.record_success(ROUTE, ttft=float(i), tokens_per_s=float(i))
    snap = reg.snapshot(ROUTE)
    assert snap.samples == 20  # the window keeps the last 20
    assert snap.median_ttft == pytest.approx(19.5)


def test_bad_latency_samples_are_ignored(reg: HealthRegistry) -> None:
    reg.record_success(ROUTE, ttft=float("nan"), tokens_per_s=-1.0)
    snap = reg.snapshot(ROUTE)
    assert snap.samples == 0 and snap.ewma_ttft is None and snap.median_tps is None
    assert snap.successes == 1


def test_laplace_success_rate(reg: HealthRegistry) -> None:
    assert reg.snapshot(ROUTE).success_rate_laplace == 0.5
    for _ in range(3):
        reg.record_success(ROUTE)
    reg.record_failure(ROUTE, FailureKind.SERVER, "500")
    assert reg.snapshot(ROUTE).success_rate_laplace == pytest.approx(4 / 6)


def test_all_and_reset_everything(reg: HealthRegistry) -> None:
    reg.record_success(ROUTE)
    reg.record_failure("vercel/x", FailureKind.AUTH, "401")
    everything = reg.all()
    assert set(everything) == {ROUTE, "vercel/x"}
    assert everything["vercel/x"].last_error_kind is FailureKind.AUTH
    assert isinstance(everything[ROUTE].to_dict()["state"], str)
    reg.reset()
    assert reg.all() == {} and len(reg) == 0


def test_listeners_see_every_change_and_may_fail(reg: HealthRegistry) -> None:
    seen: list[tuple[str, RouteState]] = []

    def listener(key: str, health: RouteHealth) -> None:
        seen.append((key, health.state))

    def broken(key: str, health: RouteHealth) -> None:
        raise RuntimeError("a broken dashboard must not break requests")

    unsubscribe = reg.add_listener(listener)
    reg.add_listener(broken)
    assert len(reg.listeners) == 2
    reg.record_success(ROUTE)
    reg.record_failure(ROUTE, FailureKind.SERVER, "500")
    reg.reset(ROUTE)
    assert seen == [(ROUTE, RouteState.OK), (ROUTE, RouteState.UNAVAILABLE), (ROUTE, RouteState.UNKNOWN)]
    unsubscribe()
    reg.record_success(ROUTE)
    assert len(seen) == 3


def test_persist_callback_gets_the_record_without_latency(pool: PoolConfig, clock: Clock) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    reg = HealthRegistry(lambda: pool, clock=clock, tz=SHANGHAI, persist=lambda k, r: calls.append((k, r)))
    reg.record_success(ROUTE, ttft=0.3, tokens_per_s=50)
    reg.record_failure(ROUTE, FailureKind.RATE_LIMIT, "Too Many Requests", status=429)
    assert [k for k, _ in calls] == [ROUTE, ROUTE]
    record = calls[-1][1]
    assert record["attempts"] == 2 and record["failures"] == 1 and record["successes"] == 1
    assert record["last_error_kind"] == "rate-limit" and record["last_status"] == 429
    assert record["rest_until"] == T0 + 60 and record["updated_at"] == T0
    assert not any("ttft" in key or "tps" in key for key in record)


def test_reset_forgets_persisted_state(pool: PoolConfig, clock: Clock) -> None:
    forgotten: list[str] = []
    blank: list[dict[str, Any]] = []
    with_forget = HealthRegistry(lambda: pool, clock=clock, tz=SHANGHAI, forget=forgotten.append)
    with_forget.record_success(ROUTE)
    with_forget.reset()
    assert forgotten == [ROUTE]
    # without a delete hook a blank record overwrites the stored one
    plain = HealthRegistry(lambda: pool, clock=clock, tz=SHANGHAI, persist=lambda k, r: blank.append(r))
    plain.record_success(ROUTE)
    plain.reset(ROUTE)
    assert blank[-1]["attempts"] == 0 and blank[-1]["updated_at"] is None


def test_a_failing_persist_does_not_fail_the_request(pool: PoolConfig, clock: Clock) -> None:
    def boom(key: str, record: dict[str, Any]) -> None:
        raise OSError("disk full")

    reg = HealthRegistry(lambda: pool, clock=clock, tz=SHANGHAI, persist=boom)
    reg.record_success(ROUTE)
    assert reg.state(ROUTE) is RouteState.OK


def test_any_resting_is_never_false_while_a_route_rests(reg: HealthRegistry, clock: Clock) -> None:
    """The planner skips its per-route health pass when `any_resting` says no: it may say yes needlessly
    (after a success ended a rest early), never no while a rest is in force — whichever way it was set."""
    assert not reg.any_resting()
    horizon = reg.record_failure(ROUTE, FailureKind.SERVER, "500")
    assert reg.is_resting(ROUTE) and reg.any_resting()
    clock.t = horizon
    assert not reg.is_resting(ROUTE) and not reg.any_resting()
    stored = reg.record(ROUTE).persistable()  # type: ignore[union-attr]
    loaded = HealthRegistry(lambda: reg._config(), clock=clock, tz=SHANGHAI)
    assert loaded.load({ROUTE: {**stored, "rest_until": clock.t + 30}}, persist_ttl=3600) == 1
    assert loaded.is_resting(ROUTE) and loaded.any_resting()
    shared = HealthRegistry(lambda: reg._config(), clock=clock, tz=SHANGHAI)
    shared.replace("b/m", {**stored, "rest_until": clock.t + 90})
    assert shared.is_resting("b/m") and shared.any_resting()
    clock.t += 60
    assert not loaded.any_resting() and shared.any_resting()
    clock.t += 31
    assert not shared.any_resting()
