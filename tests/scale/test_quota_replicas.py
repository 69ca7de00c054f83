"""Two `modelpool serve` processes over one real redis-server share what the upstreams announced (SPEC §3.8,
§9): a route replica A saw run out of requests, or short of tokens, is left by replica B too, before any
429, and taken back after its reset."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider
from modelpool.sim.spec import RateLimit
from redis_server import RedisServer
from replicas import Replica, replica_config, wait_for

WINDOW = 4.0


def quota_row(replica: Replica, route: str) -> dict[str, object] | None:
    rows = replica.admin("GET", "/admin/status")["ranking"]
    quota: dict[str, object] | None = next(r["quota"] for r in rows if r["route"] == route)
    return quota


def limited_alpha_and_beta(limit: RateLimit) -> FleetSpec:
    """`alpha` announces `limit`, `beta` announces nothing."""
    fast = {"models": [SimModel("m1", output_tokens=4)], "ttft": 0.002, "tps": 5000.0}
    return FleetSpec([SimProvider("alpha", rate_limit=limit, **fast), SimProvider("beta", **fast)])  # type: ignore[arg-type]


def test_a_route_replica_a_saw_run_short_is_demoted_on_replica_b(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    with FleetThread(limited_alpha_and_beta(RateLimit(requests=2, window=WINDOW))) as ft:
        cfg = replica_config(ft, redis_server.url, sticky=False)
        a, b = Replica("a", cfg, tmp_path), Replica("b", cfg, tmp_path)
        try:
            a.start()
            b.start()
            window_start = time.monotonic()
            assert [a.chat(text="one"), a.chat(text="two")] == ["alpha/m1", "alpha/m1"]  # 0 left now
            wait_for(
                lambda: bool((quota_row(b, "alpha/m1") or {}).get("low")),
                what="B learning alpha's quota from A",
            )
            low = str((quota_row(b, "alpha/m1") or {})["low"])
            assert low.startswith("quota low: 0 requests left until "), low
            # B never saw alpha's replies, yet sends its calls elsewhere: no 429 anywhere
            assert [b.chat(text=f"b{i}") for i in range(3)] == ["beta/m1"] * 3
            assert a.chat(text="three") == "beta/m1"
            assert [c.status for c in ft.calls("alpha")] == [200, 200]
            # after the reset both take alpha back
            time.sleep(max(0.0, window_start + WINDOW - time.monotonic()) + 0.3)
            assert b.chat(text="after") == "alpha/m1"
            assert all(c.status == 200 for c in ft.calls("alpha"))
        finally:
            a.stop()
            b.stop()


@pytest.mark.parametrize("style", ["openai", "anthropic"])
def test_a_route_short_of_tokens_on_replica_a_is_demoted_on_replica_b(
    tmp_path: Path, redis_server: RedisServer, style: str
) -> None:
    """Whether a route is short of tokens depends on each call's size, so the count itself is shared (the
    last reading before A stops calling the route too, at most a second later). Each call ("hello") costs
    the sim 1 prompt + 4 output tokens; the gateway estimates its prompt at 5 and `reserve.tokens: 4` keeps
    room for the answer: of 14 tokens a window, 4 are left after A's two calls, too few for any call."""
    limit = RateLimit(tokens=14, window=8.0, style=style)  # type: ignore[arg-type]
    with FleetThread(limited_alpha_and_beta(limit)) as ft:
        cfg = replica_config(
            ft, redis_server.url, sticky=False, quota={"reserve": {"requests": 1, "tokens": 4}}
        )
        a, b = Replica("a", cfg, tmp_path), Replica("b", cfg, tmp_path)
        try:
            a.start()
            b.start()
            assert [a.chat(text="hello"), a.chat(text="hello")] == ["alpha/m1", "alpha/m1"]
            wait_for(
                lambda: (quota_row(b, "alpha/m1") or {}).get("tokens") == 4,
                what="B learning alpha's last token count from A",
            )
            assert [b.chat(text="hello") for _ in range(2)] == ["beta/m1"] * 2
            assert [c.status for c in ft.calls("alpha")] == [200, 200]  # no 429 on either replica
            # Anthropic announces its reset in whole seconds, rounded up: wait for the reset announced.
            reset = float((quota_row(b, "alpha/m1") or {})["tokens_reset"])  # type: ignore[arg-type]
            time.sleep(max(0.0, reset - time.time()) + 0.3)
            assert b.chat(text="hello") == "alpha/m1"
            assert all(c.status == 200 for c in ft.calls("alpha"))
        finally:
            a.stop()
            b.stop()
