"""Shared helpers for the dashboard tests: the fleet they run against, gateway calls, admin reads,
screenshots, and the browser launch (real Chromium at /usr/bin/chromium, never a downloaded one)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import FleetSpec, FleetThread, InnerProvider, SimModel, SimProvider

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "artifacts" / "screenshots"
MODEL = "m1"
AGG_MODEL = "deepseek/deepseek-v4.1-flash-1017"
MESSAGES = [{"role": "user", "content": "hello"}]
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}


def require_browser() -> None:
    """Skip when Playwright or Chromium is missing — unless MODELPOOL_REQUIRE_BROWSER is set (CI sets
    it), where a missing browser must fail loudly instead of silently skipping the dashboard suite."""
    problems = []
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        problems.append("the playwright package is not installed")
    if not Path(CHROMIUM).exists():
        problems.append(f"{CHROMIUM} is missing (apt-get install chromium)")
    if problems:
        message = "; ".join(problems)
        if os.environ.get("MODELPOOL_REQUIRE_BROWSER"):
            pytest.fail(message)
        pytest.skip(message)


def dashboard_spec() -> FleetSpec:
    """Two chat channels for m1 (one with a CJK display name), a vision twin of the first, and an
    aggregator with a handful of inner providers for the ranking panel."""

    def m1() -> SimModel:
        return SimModel(MODEL, output_tokens=6, efforts=["off", "high"])

    return FleetSpec(
        [
            SimProvider("alpha", name="Alpha Cloud", models=[m1()], ttft=0.005, tps=5000.0),
            SimProvider("beta", name="硅基流动", models=[m1()], ttft=0.005, tps=5000.0),
            SimProvider("alpha-vision", name="Alpha Vision", models=[m1()], ttft=0.005, tps=5000.0),
            SimProvider(
                "agg",
                kind="vercel",
                name="Vercel AI Gateway",
                models=[SimModel(AGG_MODEL, output_tokens=6)],
                ttft=0.005,
                tps=5000.0,
                inner=[
                    InnerProvider("cerebras", tps=352, ttft_ms=240),
                    InnerProvider("deepseek", tps=191, ttft_ms=520),
                    InnerProvider("groq", tps=318, ttft_ms=205, uptime_15m=84.5),
                    InnerProvider("baseten", tps=175, ttft_ms=410),
                ],
                default_inner="baseten",
            ),
        ]
    )


def dashboard_config(ft: FleetThread, **pool: Any) -> dict[str, Any]:
    cfg = ft.to_config()
    cfg["state"] = {"backend": "memory"}
    cfg["server"] = {"admin_token": ADMIN_TOKEN}
    cfg["pool"] = {"strategy": "priority", "retry_backoff": "1ms", **pool}
    cfg["holidays"] = {"source": "bundled"}  # tests never reach the internet for the calendar
    return cfg


def chat(gw: GatewayServer, session: str, model: str = MODEL, **body: Any) -> httpx.Response:
    """One non-streamed call; the caller reads `x-modelpool-route` or the status."""
    payload = {"model": model, "messages": [{"role": "user", "content": f"hello from {session}"}], **body}
    return httpx.post(
        gw.url + "/v1/chat/completions", json=payload, headers={"x-session-id": session}, timeout=30
    )


def served_route(gw: GatewayServer, session: str, model: str = MODEL, **body: Any) -> str:
    response = chat(gw, session, model, **body)
    assert response.status_code == 200, response.text
    return response.headers["x-modelpool-route"]


def admin(gw: GatewayServer, path: str, body: Any = None, method: str | None = None) -> Any:
    verb = method or ("POST" if body is not None else "GET")
    response = httpx.request(verb, gw.url + path, json=body, headers=gw.admin_headers(), timeout=15)
    assert response.status_code < 400, response.text
    return response.json()


def in_force(gw: GatewayServer, key: str) -> dict[str, Any]:
    """The `status` row for one setting: its value and the layer it came from."""
    (row,) = [r for r in admin(gw, "/admin/status")["in_force"] if r["key"] == key]
    return dict(row)


def wait_for(predicate: Callable[[], bool], timeout: float = 15.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout} s")
        time.sleep(0.05)


def shot(page: Any, name: str) -> Path:
    """Save a full-page screenshot as a test artifact (`artifacts/screenshots/NAME.png`)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


class Dash:
    """A page on the dashboard of one running gateway."""

    def __init__(self, gw: GatewayServer, page: Any) -> None:
        self.gw = gw
        self.page = page
        self.errors: list[str] = []
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))

    def login(self, token: str = ADMIN_TOKEN) -> None:
        from playwright.sync_api import expect

        self.page.goto(self.gw.url + "/")
        self.page.fill("#token", token)
        self.page.click("#login-submit")
        expect(self.page.locator("#nav")).to_be_visible()
        expect(self.page.locator("#page-overview")).to_be_attached()

    def goto(self, name: str) -> Any:
        from playwright.sync_api import expect

        self.page.click(f'#nav a[data-page="{name}"]')
        root = self.page.locator(f"#page-{name}")
        expect(root).to_be_attached()
        return root

    def wait_live(self) -> None:
        """The page's EventSource is connected: from now on the gateway counts it as a watcher."""
        from playwright.sync_api import expect

        expect(self.page.locator("#live")).to_have_attribute("data-state", "live")
