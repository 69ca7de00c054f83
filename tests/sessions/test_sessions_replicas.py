"""Session histories shared by two `modelpool serve` replicas on one real redis-server (SPEC §8, §9): a
session served by both is one history on either replica, with every call and the summed cost."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from modelpool.sim import FleetThread
from redis_server import RedisServer
from replicas import Replica, replica_config, three_route_spec, wait_for

PRICES = {"input": 2.0, "output": 8.0}


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[FleetThread, RedisServer]]:
    server = RedisServer(tmp_path / "redis").start()
    with FleetThread(three_route_spec()) as ft:
        yield ft, server
    server.stop()


def test_one_sessions_calls_on_two_replicas_are_one_history_on_either(
    setup: tuple[FleetThread, RedisServer], tmp_path: Path
) -> None:
    ft, redis = setup
    cfg = replica_config(ft, redis.url, provider_order=["alpha", "beta", "gamma"])
    cfg["sessions"] = {"calls_kept": 4}
    for p in cfg["providers"]:
        p["prices"] = PRICES
    a, b = Replica("a", cfg, tmp_path).start(), Replica("b", cfg, tmp_path).start()
    try:
        for i in range(3):
            a.chat("shared-run", text=f"on a {i}")
            b.chat("shared-run", text=f"on b {i}")
        b.chat("only-b")
        # Each replica writes its calls in the background (every 0.5 s): the other sees them then.
        for r in (a, b):
            wait_for(
                lambda r=r: (r.admin("GET", "/admin/sessions/shared-run")["summary"] or {}).get("calls") == 6,
                what=f"replica {r.name} sees all six calls",
            )
        wait_for(
            lambda: "only-b" in {r["session"] for r in a.admin("GET", "/admin/sessions")["sessions"]},
            what="replica a lists b's session",
        )
        seen = [r.admin("GET", "/admin/sessions/shared-run") for r in (a, b)]
        listed_on_a = a.admin("GET", "/admin/sessions")["sessions"]
    finally:
        a.stop()
        b.stop()
    for one in seen:
        assert one["summary"]["calls"] == 6, one["summary"]  # every call, from both replicas
        assert len(one["calls"]) == 4  # the last calls_kept
        assert one["summary"]["cost_usd"] > 0
        assert all(c["route"] == "alpha/m1" and c["tokens_out"] == 6 for c in one["calls"])
    assert seen[0]["calls"] == seen[1]["calls"]
    rows = {r["session"]: r for r in listed_on_a}
    assert rows["only-b"]["calls"] == 1  # a session replica a never served, listed on a
    assert rows["shared-run"]["calls"] == 6
    assert rows["shared-run"]["cost_usd"] == pytest.approx(seen[0]["summary"]["cost_usd"])
