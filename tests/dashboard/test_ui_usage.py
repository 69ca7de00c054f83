"""The dashboard's Usage page in real Chromium (SPEC §14): the spend-per-day and per-route charts and the
table show the figures `/admin/usage` gives, in English and 简体中文."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from dash_helpers import DESKTOP, Dash, admin, chat, dashboard_config, dashboard_spec, shot

from gateway_server import GatewayServer
from modelpool.sim import FleetThread

DAY1 = datetime(2026, 11, 24, 12, 0, tzinfo=UTC).timestamp()
DAY2 = datetime(2026, 11, 25, 12, 0, tzinfo=UTC).timestamp()


def expect(locator: Any) -> Any:
    from playwright.sync_api import expect as pw_expect

    return pw_expect(locator)


class Clock:
    def __init__(self, at: float) -> None:
        self.at = at

    def __call__(self) -> float:
        return self.at


@pytest.fixture
def priced() -> Iterator[tuple[GatewayServer, Clock]]:
    with FleetThread(dashboard_spec()) as ft:
        cfg = dashboard_config(ft)
        for p in cfg["providers"]:
            p["prices"] = {"alpha": {"input": 2.0, "output": 8.0}, "beta": {"input": 1.0, "output": 3.0}}.get(
                p["id"], {"source": "off"}
            )
        clock = Clock(DAY1)
        with GatewayServer(cfg, clock=clock) as gw:
            yield gw, clock


def test_usage_page_draws_spend_per_day_and_route_with_the_api_figures(
    browser: Any, priced: tuple[GatewayServer, Clock]
) -> None:
    gw, clock = priced
    assert chat(gw, "u1").status_code == 200
    assert chat(gw, "u2").status_code == 200
    clock.at = DAY2
    admin(gw, "/admin/pin", {"pool": "m1", "route": "beta/m1"})
    assert chat(gw, "u3").headers["x-modelpool-route"] == "beta/m1"
    days = admin(gw, "/admin/usage?group_by=day")["rows"]
    routes = admin(gw, "/admin/usage?group_by=route")["rows"]
    assert [d["day"] for d in days] == ["2026-11-24", "2026-11-25"] and all(d["cost_usd"] > 0 for d in days)

    context = browser.new_context(viewport=DESKTOP, locale="en-US")
    try:
        d = Dash(gw, context.new_page())
        d.login()
        root = d.goto("usage")
        page = d.page
        bars = page.locator("#usage-day-chart rect.bar")
        expect(bars).to_have_count(2)
        for day in days:
            bar = page.locator(f'#usage-day-chart rect[data-day="{day["day"]}"]')
            assert float(bar.get_attribute("data-cost")) == pytest.approx(day["cost_usd"])
        heights = [float(bars.nth(i).get_attribute("height")) for i in range(2)]
        assert heights[0] > 0 and heights[1] > 0  # drawn, in proportion to the spend
        assert heights[0] / heights[1] == pytest.approx(days[0]["cost_usd"] / days[1]["cost_usd"], rel=1e-3)
        for r in routes:
            bar = page.locator(f'#usage-route-chart rect[data-route="{r["route"]}"]')
            assert float(bar.get_attribute("data-cost")) == pytest.approx(r["cost_usd"])
        rows = page.locator("#usage-table tbody tr")
        expect(rows).to_have_count(len(routes))
        for r in routes:
            row = page.locator(f'#usage-table tr[data-name="{r["route"]}"]')
            expect(row.locator(".calls")).to_have_text(str(r["calls"]))
            assert float(row.locator(".cost").get_attribute("data-cost")) == pytest.approx(r["cost_usd"])
        page.select_option("#usage-group", "day")
        expect(page.locator('#usage-table tr[data-name="2026-11-25"] .calls')).to_have_text("1")
        shot(page, "usage")
        page.select_option("#lang", "zh")
        expect(page.locator('#nav a[data-page="usage"]')).to_have_text("用量")
        expect(page.locator("#page-usage h2").first).to_have_text("用量与费用")
        expect(page.locator("#usage-day-chart rect.bar")).to_have_count(2)
        shot(page, "usage-zh")
        assert d.errors == [], d.errors
        del root
    finally:
        context.close()
