"""Speed estimates that react (issue #18) through the real server: a route whose time to first event
jumps loses new sessions after two of its calls, and once it recovers, re-measuring by real traffic
(`pool.speed.explore`) gives it its place back; the reasons say which estimate ranked it and how old."""

from __future__ import annotations

import time
from typing import Any

import httpx

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider
from support import base_config


def ask(gw: GatewayServer, session: str) -> str:
    resp = httpx.post(
        gw.url + "/v1/chat/completions",
        json={"model": "m1", "messages": [{"role": "user", "content": session}], "stream": True},
        headers={"x-session-id": session},
        timeout=20,
    )
    assert resp.status_code == 200
    return resp.headers["x-modelpool-route"]


def set_ttft(ft: FleetThread, provider: str, ttft: float) -> None:
    resp = httpx.post(ft.root_url(provider) + "/_sim/speed", json={"ttft": ttft}, timeout=5)
    assert resp.json()["ttft"] == ttft


def session_info(gw: GatewayServer, sid: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    return httpx.get(f"{gw.url}/admin/sessions/{sid}", headers=headers, timeout=5).json()  # type: ignore[no-any-return]


def test_a_slowed_route_loses_new_sessions_and_wins_them_back_once_recovered() -> None:
    spec = FleetSpec(
        [
            SimProvider("alpha", models=[SimModel("m1", output_tokens=4)], ttft=0.02, tps=5000.0),
            SimProvider("beta", models=[SimModel("m1", output_tokens=4)], ttft=0.15, tps=5000.0),
        ]
    )
    with FleetThread(spec) as ft:
        # every 4th call re-measures the route whose newest sample is the oldest (after 1 s)
        cfg = base_config(ft, strategy="fastest", speed={"explore": "25%", "explore_after": "1s"})
        with GatewayServer(cfg) as gw:
            routes = [ask(gw, f"warm{i}") for i in range(6)]
            assert routes[-1] == "alpha/m1"  # both probed, alpha is faster
            assert "EWMA TTFT" in session_info(gw, "warm5")["last_plan"]["candidates"][0]["why"][-1]
            set_ttft(ft, "alpha", 0.6)  # alpha's first event now takes 4× beta's
            slow = [ask(gw, f"slow{i}") for i in range(5)]
            # one slow sample already lifts alpha's EWMA above beta's, a second (its own, or a re-measure
            # of an estimate its newest sample disagreed with) restarts its window: new sessions go to beta
            assert slow[0] == "alpha/m1" and slow[2:] == ["beta/m1"] * 3
            reasons = session_info(gw, "slow4")["last_plan"]["candidates"][0]["why"]
            assert any("samples, newest" in r for r in reasons), reasons
            set_ttft(ft, "alpha", 0.02)  # recovered
            time.sleep(1.1)  # alpha's newest sample is now older than `explore_after`
            back = [ask(gw, f"back{i}") for i in range(8)]
            # an explored call finds alpha fast again; one better sample is enough to rank it first
            # (beta may itself be re-measured once in a while: that is what keeps its estimate fresh)
            first = back.index("alpha/m1")
            assert first <= 4 and back[first:].count("alpha/m1") >= len(back[first:]) - 1
            assert back[-1] == "alpha/m1"
