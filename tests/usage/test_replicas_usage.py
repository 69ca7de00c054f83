"""Usage and budgets shared by two `modelpool serve` replicas on one real redis-server (SPEC §14, §9)."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from modelpool.sim import FleetThread
from redis_server import RedisServer
from replicas import Replica, replica_config, three_route_spec, wait_for

PRICES = {"input": 2.0, "output": 8.0}
MSG = [{"role": "user", "content": "shared spend"}]


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[FleetThread, RedisServer]]:
    server = RedisServer(tmp_path / "redis").start()
    with FleetThread(three_route_spec()) as ft:
        yield ft, server
    server.stop()


def _config(ft: FleetThread, url: str, budget: float | None = None) -> dict:
    cfg = replica_config(ft, url, provider_order=["alpha", "beta", "gamma"])
    for p in cfg["providers"]:
        p["prices"] = PRICES
    keys: list = ["sk-plain"]
    if budget is not None:
        keys.append({"key": "sk-shared", "name": "shared", "budget": {"usd": budget, "per": "day"}})
    cfg["server"]["api_keys"] = keys
    return cfg


def _call(r: Replica, key: str) -> float | None:
    client = openai.OpenAI(base_url=r.url + "/v1", api_key=key, max_retries=0, timeout=30)
    try:
        raw = client.chat.completions.with_raw_response.create(model="m1", messages=MSG, max_tokens=6)
    except openai.RateLimitError:
        return None
    finally:
        client.close()
    raw.parse()
    return float(raw.headers["x-modelpool-cost"])


def test_usage_sums_agree_across_replicas_and_survive_their_restart(
    setup: tuple[FleetThread, RedisServer], tmp_path: Path
) -> None:
    ft, redis = setup
    cfg = _config(ft, redis.url)
    a, b = Replica("a", cfg, tmp_path).start(), Replica("b", cfg, tmp_path).start()
    try:
        costs = [_call(a, "sk-plain") for _ in range(3)] + [_call(b, "sk-plain") for _ in range(2)]
        total = sum(c for c in costs if c is not None)

        def agreed() -> bool:
            ra = a.admin("GET", "/admin/usage?group_by=route")
            rb = b.admin("GET", "/admin/usage?group_by=route")
            return ra["rows"] == rb["rows"] and ra["total"]["calls"] == 5

        wait_for(agreed, what="both replicas reporting the five calls")
        report = a.admin("GET", "/admin/usage?group_by=key")
        assert report["rows"][0]["key"].startswith("key-") and report["total"]["cost_usd"] == pytest.approx(
            total
        )
    finally:
        a.stop()
        b.stop()
    c = Replica("c", cfg, tmp_path).start()  # a fresh replica reads what the others wrote
    try:
        day = c.admin("GET", "/admin/usage?group_by=day")
        assert day["total"]["calls"] == 5 and day["total"]["cost_usd"] == pytest.approx(total)
    finally:
        c.stop()


def test_one_budget_holds_across_two_replicas_under_concurrency(
    setup: tuple[FleetThread, RedisServer], tmp_path: Path
) -> None:
    ft, redis = setup
    probe_cfg = _config(ft, redis.url)
    probe = Replica("probe", probe_cfg, tmp_path).start()
    try:
        one = _call(probe, "sk-plain")
    finally:
        probe.stop()
    assert one is not None
    cfg = _config(ft, redis.url, budget=one * 5)
    cfg["state"]["redis_prefix"] = "budget"  # a clean slate for the shared counters
    a, b = Replica("a", cfg, tmp_path).start(), Replica("b", cfg, tmp_path).start()
    try:
        with concurrent.futures.ThreadPoolExecutor(20) as pool:
            results = list(pool.map(lambda i: _call(a if i % 2 else b, "sk-shared"), range(20)))
        served = [c for c in results if c is not None]
        assert 1 <= len(served) <= 6  # at most one call's estimate over the budget of five calls
        assert sum(served) <= one * 6 + 1e-12
        keys = a.admin("GET", "/admin/keys")["keys"]
        shared = next(k for k in keys if k["name"] == "shared")
        wait_for(lambda: a.admin("GET", "/admin/keys")["keys"][1]["budget_state"]["reserved_usd"] < 1e-12,
                 what="settled reservations")  # fmt: skip
        assert shared["budget"]["usd"] == pytest.approx(one * 5)
    finally:
        a.stop()
        b.stop()


def test_a_budget_key_is_served_while_redis_is_down(setup: tuple[FleetThread, RedisServer]) -> None:
    """SPEC §9: a call never hangs on the state backend; the replica counts the key's spend locally."""
    from gateway_server import GatewayServer

    ft, redis = setup
    cfg = _config(ft, redis.url, budget=1.0)
    with GatewayServer(cfg) as gw:
        r = Replica.__new__(Replica)  # only `url` is read by _call
        r.url = gw.url
        assert _call(r, "sk-shared") is not None  # through Redis
        redis.kill()
        assert _call(r, "sk-shared") is not None  # Redis gone: admitted on local counts, not a 500
        keys = gw.gateway.accounts.limits
        assert keys._degraded
