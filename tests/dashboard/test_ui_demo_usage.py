"""`modelpool demo` counts what its traffic costs (issue #26, SPEC §10, §14): the demo fleet's providers carry
prices (peak / off-peak on the first-party route `deepseek`), so within a minute of starting, the usage API
and the dashboard's Usage page (real Chromium) show non-zero spend — the demo's own traffic generator, whose
streamed calls do not ask for usage, through the real `modelpool demo` process."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from gateway_server import free_port
from modelpool.sim import demo_fleet
from support import wait_ready

pytestmark = pytest.mark.timeout(150)


@dataclass
class Demo:
    url: str
    token: str

    def usage(self, by: str) -> dict[str, Any]:
        r = httpx.get(
            f"{self.url}/admin/usage?group_by={by}",
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=10,
        )
        r.raise_for_status()
        return r.json()  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def demo() -> Iterator[Demo]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "modelpool.cli.main", "demo", "--port", str(port), "--rate", "4"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        token = None
        assert proc.stdout is not None
        for line in proc.stdout:
            if "admin token:" in line:
                token = line.split("admin token:", 1)[1].strip()
                break
        assert token, "the demo printed no admin token"
        # The rest of its output is read on (a full pipe would stall the demo), and the token is printed
        # before the server listens: wait until it answers.
        threading.Thread(target=proc.stdout.read, daemon=True).start()
        url = f"http://127.0.0.1:{port}"
        assert wait_ready(url, proc), "the demo exited or did not become ready in 30 s"
        yield Demo(url, token)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_every_demo_provider_is_priced() -> None:
    prices = {p.id: p.prices for p in demo_fleet().providers}
    assert all(prices.values()), prices
    assert set(prices["deepseek"] or {}) == {"peak", "off_peak"}  # the first-party route's periods
    peak, off = prices["deepseek"]["peak"], prices["deepseek"]["off_peak"]  # type: ignore[index]
    assert off["input"] < peak["input"] and off["output"] < peak["output"]


def test_the_demo_shows_spend_within_a_minute(demo: Demo) -> None:
    deadline = time.monotonic() + 60
    while True:
        report = demo.usage("route")
        if report["total"]["cost_usd"] > 0 and report["total"]["calls"] >= 20:
            break
        assert time.monotonic() < deadline, f"no spend after a minute of demo traffic: {report}"
        time.sleep(1)
    rows = {r["route"]: r for r in report["rows"]}
    for route, row in rows.items():
        assert row["tokens_in"] > 0 and row["tokens_out"] > 0, (route, row)  # every call counted
        assert row["cost_usd"] > 0, (route, row)  # every route priced
    pools = {r["pool"] for r in demo.usage("pool")["rows"]}
    assert pools == {"deepseek-v4.1-flash"}, pools


def test_the_usage_page_shows_the_spend(demo: Demo, browser: Any) -> None:
    from dash_helpers import DESKTOP, Dash
    from playwright.sync_api import expect

    deadline = time.monotonic() + 60
    while demo.usage("route")["total"]["cost_usd"] <= 0:
        assert time.monotonic() < deadline
        time.sleep(1)
    context = browser.new_context(viewport=DESKTOP, locale="en-US")
    try:
        d = Dash(demo, context.new_page())  # type: ignore[arg-type]
        d.login(demo.token)
        d.goto("usage")
        bars = d.page.locator("#usage-day-chart rect.bar")
        expect(bars.first).to_be_attached()
        assert float(bars.first.get_attribute("data-cost") or 0) > 0
        rows = d.page.locator("#usage-table tbody tr")
        expect(rows.first).to_be_attached()
        costs = [
            float(rows.nth(i).locator(".cost").get_attribute("data-cost") or 0) for i in range(rows.count())
        ]
        assert costs and all(c > 0 for c in costs), costs
        assert d.errors == [], d.errors
    finally:
        context.close()


def test_an_estimated_row_is_marked_on_the_usage_page(browser: Any) -> None:
    """A route that reports no usage: its row's input tokens carry the `≈` mark with the count."""
    from dash_helpers import DESKTOP, Dash
    from playwright.sync_api import expect

    from gateway_server import ADMIN_TOKEN, GatewayServer
    from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider

    spec = FleetSpec(
        [SimProvider("mute", models=[SimModel("m1")], reports_usage=False, ttft=0.001, tps=5000.0)]
    )
    with FleetThread(spec) as ft:
        cfg = ft.to_config(state={"backend": "memory"}, server={"admin_token": ADMIN_TOKEN})
        cfg["providers"][0]["prices"] = {"input": 1.0, "output": 2.0}
        with GatewayServer(cfg) as gw:
            body = {"model": "m1", "messages": [{"role": "user", "content": "hello " * 40}]}
            assert httpx.post(gw.url + "/v1/chat/completions", json=body, timeout=10).status_code == 200
            context = browser.new_context(viewport=DESKTOP, locale="en-US")
            try:
                d = Dash(gw, context.new_page())
                d.login()
                d.goto("usage")
                mark = d.page.locator('#usage-table tr[data-name="mute/m1"] .tokens-in .estimated')
                expect(mark).to_have_count(1)
                assert "for 1 call(s)" in (mark.get_attribute("title") or "")
                assert d.errors == [], d.errors
            finally:
                context.close()
