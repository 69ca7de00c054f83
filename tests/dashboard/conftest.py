"""Fixtures for the dashboard tests: one Chromium per module, a fresh fleet and gateway per test, and a
`dash(...)` factory that opens a logged-in page on it. Uncaught page errors fail the test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from dash_helpers import (
    CHROMIUM,
    CHROMIUM_ARGS,
    DESKTOP,
    Dash,
    dashboard_config,
    dashboard_spec,
    require_browser,
)

from gateway_server import GatewayServer
from modelpool.sim import FleetThread


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    require_browser()
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=15_000)  # a loaded CI machine is slow, never a reason to fail
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def dash_fleet() -> Iterator[FleetThread]:
    with FleetThread(dashboard_spec()) as ft:
        yield ft


@pytest.fixture
def dash(browser: Any, dash_fleet: FleetThread) -> Iterator[Callable[..., Dash]]:
    stack = ExitStack()
    opened: list[Dash] = []

    def open_dashboard(viewport: dict[str, int] = DESKTOP, login: bool = True, **pool: Any) -> Dash:
        gw = stack.enter_context(GatewayServer(dashboard_config(dash_fleet, **pool)))
        context = browser.new_context(viewport=viewport, locale="en-US")
        stack.callback(context.close)  # LIFO: the browser hangs up before the gateway stops
        d = Dash(gw, context.new_page())
        opened.append(d)
        if login:
            d.login()
        return d

    try:
        yield open_dashboard
    finally:
        stack.close()
    errors = [e for d in opened for e in d.errors]
    assert not errors, f"uncaught errors in the page: {errors}"
