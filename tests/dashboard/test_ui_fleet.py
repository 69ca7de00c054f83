"""The dashboard of replica B, in real Chromium, shows what replica A serves (SPEC §9, issue #20): A's
session with its live route on the Sessions page and A's switch on the Events page. Two real
`modelpool serve` processes share one real redis-server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dash_helpers import Dash, shot

from modelpool.sim import Fault, FleetThread
from redis_server import RedisServer
from replicas import Replica, replica_config, three_route_spec, wait_for


def expect(locator: Any) -> Any:
    from playwright.sync_api import expect as pw_expect

    return pw_expect(locator)


@pytest.fixture
def fleet_pair(tmp_path: Path) -> Iterator[tuple[FleetThread, Replica, Replica]]:
    redis = RedisServer(tmp_path / "redis").start()
    started: list[Replica] = []
    try:
        with FleetThread(three_route_spec()) as ft:
            cfg = replica_config(ft, redis.url, retries_per_route=0)
            for name in ("a", "b"):
                started.append(Replica(name, cfg, tmp_path).start())
            yield ft, started[0], started[1]
            for replica in started:
                replica.stop()
    finally:
        redis.stop()


def test_b_dashboard_shows_a_session_and_a_switch(
    browser: Any, fleet_pair: tuple[FleetThread, Replica, Replica]
) -> None:
    ft, a, b = fleet_pair
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    try:
        d = Dash(b, context.new_page())  # type: ignore[arg-type]  # a Replica has the url Dash needs
        d.login()
        d.wait_live()
        wait_for(lambda: a.admin("GET", "/admin/status")["fleet"]["watchers"]["elsewhere"] >= 1, what="A")
        ft.set_faults("alpha", [Fault("quota", times=1)])
        assert a.chat(session="served-by-a") == "beta/m1"
        d.goto("events")
        switch = d.page.locator('#events-list li.event[data-type="switch"]')
        expect(switch).to_have_count(1)
        expect(switch.locator(".etext")).to_contain_text("alpha/m1 → beta/m1 (quota)")
        expect(switch.locator(".etext")).to_contain_text("served-by-a")
        shot(d.page, "fleet-events")
        d.goto("sessions")
        row = d.page.locator('#sessions-table tr[data-session="served-by-a"]')
        expect(row).to_have_attribute("data-route", "beta/m1")
        expect(row.locator(".model")).to_have_text("m1")
        expect(row.locator(".pool")).to_have_text("m1")
        shot(d.page, "fleet-sessions")
        assert not d.errors, d.errors
    finally:
        context.close()
