"""Peak/idle ranking through the real server, with an injected clock (issue: periods)."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import httpx
import openai

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import FleetThread

BJ = ZoneInfo("Asia/Shanghai")


class Clock:
    def __init__(self, when: datetime) -> None:
        self.now = when.timestamp()

    def __call__(self) -> float:
        return self.now

    def set(self, when: datetime) -> None:
        self.now = when.timestamp()


def at(*args: int) -> datetime:
    return datetime(*args, tzinfo=BJ)


def config(ft: FleetThread, **pool: object) -> dict:
    cfg = ft.to_config(state={"backend": "memory"}, server={"admin_token": ADMIN_TOKEN})
    cfg["pool"] = {"strategy": "priority", **pool}
    cfg["peak"] = {"peak_provider_order": ["beta"], "off_peak_provider_order": ["alpha"]}
    cfg["holidays"] = {"source": "bundled"}
    return cfg


def route(gw: GatewayServer, session: str) -> str:
    c = openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0)
    raw = c.chat.completions.with_raw_response.create(
        model="m1", messages=[{"role": "user", "content": "hi"}], extra_headers={"x-session-id": session}
    )
    return raw.headers["x-modelpool-route"]


def test_the_period_decides_where_a_conversation_starts(fleet: FleetThread) -> None:
    clock = Clock(at(2026, 11, 27, 17, 59))  # a Friday, inside the 14:00-18:00 peak window
    with GatewayServer(config(fleet), clock=clock) as gw:
        assert route(gw, "s1") == "beta/m1"  # peak order
        clock.set(at(2026, 11, 27, 18, 1))  # the window closed: idle
        assert route(gw, "s2") == "alpha/m1"  # a new conversation follows the idle order
        assert route(gw, "s1") == "beta/m1"  # sticky: the first one keeps its provider across the flip
        clock.set(at(2026, 10, 1, 10, 0))  # National Day, 10:00 on a Thursday: a statutory holiday
        assert route(gw, "s3") == "alpha/m1"
        clock.set(at(2026, 9, 20, 10, 0))  # a make-up Sunday: a working day, inside the window
        assert route(gw, "s4") == "beta/m1"
        clock.set(at(2026, 9, 19, 10, 0))  # an ordinary Saturday
        assert route(gw, "s5") == "alpha/m1"
        period = httpx.get(gw.url + "/admin/period", headers=gw.admin_headers(), timeout=5).json()
        assert period["period"] == "idle" and period["next_flip"].startswith("2026-09-20T09:00")


def test_without_sticky_the_provider_changes_exactly_at_the_boundary(fleet: FleetThread) -> None:
    clock = Clock(at(2026, 11, 27, 11, 59))
    with GatewayServer(config(fleet, sticky=False), clock=clock) as gw:
        assert route(gw, "s1") == "beta/m1"
        clock.set(at(2026, 11, 27, 12, 0))  # lunch break: idle
        assert route(gw, "s1") == "alpha/m1"


def test_cheapest_uses_the_cost_hint_of_the_current_period(fleet: FleetThread) -> None:
    cfg = config(fleet, strategy="cheapest", costs={"alpha": {"peak": 1.0, "off_peak": 0.1}, "beta": 0.5})
    cfg["peak"] = {}  # no order overlay: only the costs differ by period
    clock = Clock(at(2026, 11, 27, 10, 0))
    with GatewayServer(cfg, clock=clock) as gw:
        assert route(gw, "s1") == "beta/m1"  # peak: alpha costs 1.0
        clock.set(at(2026, 11, 28, 10, 0))  # Saturday: idle, alpha costs 0.1
        assert route(gw, "s2") == "alpha/m1"


def test_calendar_and_status_report_the_period(fleet: FleetThread) -> None:
    clock = Clock(at(2026, 10, 2, 9, 30))
    with GatewayServer(config(fleet), clock=clock) as gw:
        status = httpx.get(gw.url + "/admin/status", headers=gw.admin_headers(), timeout=5).json()
        assert status["period"]["period"] == "idle" and "国庆" in status["period"]["why"]
        assert status["period"]["next_flip"].startswith("2026-10-08T09:00")  # first working day after
        cal = httpx.get(gw.url + "/admin/calendar", headers=gw.admin_headers(), timeout=5).json()
        assert cal["year"] == 2026 and cal["status"] == "bundled"
        assert cal["holidays"] == 33 and cal["makeup_workdays"] == 6
