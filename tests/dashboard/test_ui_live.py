"""The dashboard in real Chromium, part 2: Settings (provider priority with the arrow buttons, the
strategy), a consent card, the live Events page while traffic runs, the Ranking panel following
replies, and the Sessions page. Every page this file visits is saved to artifacts/screenshots/."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from dash_helpers import AGG_MODEL, Dash, admin, chat, in_force, served_route, shot, wait_for

from gateway_server import GatewayServer
from modelpool.sim import Fault, FleetThread


def expect(locator: Any) -> Any:
    from playwright.sync_api import expect as pw_expect

    return pw_expect(locator)


def test_arrow_buttons_reorder_provider_priority_and_the_next_call_follows(
    dash: Callable[..., Dash],
) -> None:
    d = dash()
    page = d.page
    assert served_route(d.gw, "before") == "alpha/m1"
    d.goto("settings")
    editor = page.locator('.order-editor[data-key="pool.provider_order"]')
    items = editor.locator("li")
    expect(items).to_have_count(4)
    # listed by display name, in registration order while nothing is configured
    expect(items.locator(".name")).to_have_text(
        ["Alpha Cloud", "硅基流动", "Alpha Vision", "Vercel AI Gateway"]
    )
    editor.locator('li[data-provider="beta"] button.up').click()
    expect(items.first).to_have_attribute("data-provider", "beta")
    editor.locator("button.save-order").click()
    expect(page.locator('.order-editor[data-key="pool.provider_order"] .layer')).to_have_text("dashboard")
    assert in_force(d.gw, "pool.provider_order") == {
        "key": "pool.provider_order",
        "value": ["beta"],  # the tail already in registration order is not stored
        "layer": "dashboard",
    }
    assert served_route(d.gw, "after") == "beta/m1"
    shot(page, "settings")


def test_strategy_change_applies_live_and_lands_in_the_dashboard_layer(dash: Callable[..., Dash]) -> None:
    d = dash()
    page = d.page
    d.goto("settings")
    knob = page.locator('.knob[data-key="pool.strategy"]')
    expect(knob).to_have_attribute("data-layer", "file")
    page.select_option("#knob-pool-strategy", "round-robin")
    expect(page.locator('.knob[data-key="pool.strategy"]')).to_have_attribute("data-layer", "dashboard")
    assert in_force(d.gw, "pool.strategy") == {
        "key": "pool.strategy",
        "value": "round-robin",
        "layer": "dashboard",
    }
    # round-robin rotates the first route call by call (a new session each time: no sticky pin)
    assert {served_route(d.gw, f"rr{i}") for i in range(4)} == {"alpha/m1", "beta/m1"}
    page.locator('.knob[data-key="pool.strategy"] button.reset').click()
    expect(page.locator('.knob[data-key="pool.strategy"]')).to_have_attribute("data-layer", "file")
    assert in_force(d.gw, "pool.strategy")["value"] == "priority"


def test_consent_card_keep_and_switch(dash: Callable[..., Dash], dash_fleet: FleetThread) -> None:
    dash_fleet.set_faults("alpha", [Fault("server_error")])
    d = dash(retries_per_route=0, confirm_switch="ask", confirm_timeout="60s")
    page = d.page
    d.goto("questions")
    d.wait_live()  # the page's event stream is what lets the gate ask
    with ThreadPoolExecutor(1) as pool:
        call = pool.submit(chat, d.gw, "asks")
        card = page.locator(".question").first
        expect(card).to_be_visible()
        expect(card.locator(".qroute")).to_contain_text("alpha/m1 → beta/m1")
        expect(card.locator(".countdown")).to_contain_text("switches by itself in")
        expect(page.locator("#question-count")).to_have_text("1")
        shot(page, "questions")
        card.locator(".answer-keep").click()
        response = call.result(30)
    assert response.status_code == 502  # Keep ends the call on the original error
    expect(card).to_have_attribute("data-outcome", "keep")

    admin(d.gw, "/admin/health/reset", {})  # alpha rests after that failure; ask again from the top
    with ThreadPoolExecutor(1) as pool:
        call = pool.submit(chat, d.gw, "switches")
        fresh = page.locator(".question:not([data-outcome])").first
        expect(fresh).to_be_visible()
        fresh.locator(".answer-switch").click()
        response = call.result(30)
    assert response.status_code == 200 and response.headers["x-modelpool-route"] == "beta/m1"
    expect(page.locator("#question-count")).to_be_hidden()


@contextmanager
def traffic(gw: GatewayServer) -> Iterator[list[int]]:
    """Calls in a loop on a thread of their own, each its own session, until the block ends."""
    stop = threading.Event()
    statuses: list[int] = []

    def run() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            statuses.append(chat(gw, f"traffic-{n}").status_code)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield statuses
    finally:
        stop.set()
        thread.join(30)


def test_switch_events_appear_live_while_traffic_runs(
    dash: Callable[..., Dash], dash_fleet: FleetThread
) -> None:
    dash_fleet.set_faults("alpha", [Fault("server_error", every=2)])
    # A tiny cooldown brings alpha back quickly, so switches keep happening while the page watches.
    d = dash(retries_per_route=0, cooldown="10ms", max_cooldown="20ms")
    page = d.page
    d.goto("events")
    d.wait_live()
    with traffic(d.gw) as statuses:
        switch = page.locator('#events-list .event[data-type="switch"]').first
        expect(switch).to_be_visible()
        expect(switch).to_contain_text("alpha/m1 → beta/m1 (server)")
        expect(page.locator('#events-list .event[data-type="failure"]').first).to_contain_text("alpha/m1")
        shot(page, "events")
    assert statuses and set(statuses) == {200}  # every switched call still answered


def test_ranking_panel_follows_replies(dash: Callable[..., Dash]) -> None:
    d = dash()
    page = d.page
    d.goto("ranking")
    expect(page.locator("#ranking-model")).to_have_value(f"agg/{AGG_MODEL}")
    rows = page.locator("#ranking-table tbody tr")
    expect(rows.first).to_have_attribute("data-provider", "cerebras")  # fastest first
    expect(page.locator('#ranking-table tr[data-provider="deepseek"] .first-party')).to_be_visible()
    expect(page.locator('#ranking-table tr[data-provider="groq"]')).to_have_class("demoted")  # low uptime
    expect(page.locator("#served-by")).to_contain_text("No reply")
    response = chat(d.gw, "rank-1", model=AGG_MODEL)
    assert response.status_code == 200
    # no reload: the panel picks up the reply by itself
    expect(page.locator("#served-by")).to_contain_text("rank-1")
    expect(page.locator("#served-by .provider")).to_have_text("cerebras")
    shot(page, "ranking")


def test_sessions_show_the_live_route(dash: Callable[..., Dash]) -> None:
    d = dash()
    page = d.page
    d.goto("sessions")
    expect(page.locator("#sessions-none")).to_be_visible()
    assert served_route(d.gw, "chat-42", reasoning_effort="high") == "alpha/m1"
    row = page.locator('#sessions-table tr[data-session="chat-42"]')
    expect(row.locator(".provider")).to_contain_text("Alpha Cloud")
    expect(row.locator(".model")).to_have_text("m1")
    expect(row.locator(".effort")).to_have_text("high")
    expect(row.locator(".pool")).to_have_text("m1")
    wait_for(lambda: admin(d.gw, "/admin/sessions")["sessions"][0]["session"] == "chat-42")
    shot(page, "sessions")


def test_merged_groups_editor_regroups_the_pools(dash: Callable[..., Dash]) -> None:
    d = dash()
    page = d.page
    d.goto("settings")
    card = page.locator("#groups-card")
    expect(card.locator("tbody tr")).to_have_count(2)  # the two shipped groups
    card.locator("#group-add").click()
    fresh = card.locator("tbody tr").last
    fresh.locator("input.gid").fill("everything")
    fresh.locator("input.gname").fill("Everything")
    fresh.locator("input.gmodels").fill("m1, agg/*")
    card.locator("#groups-save").click()
    expect(page.locator('#groups-card .pools-preview li[data-pool="everything"]')).to_contain_text("alpha/m1")
    expect(page.locator("#groups-card h2 .layer")).to_have_text("dashboard")
    assert in_force(d.gw, "pool.groups")["layer"] == "dashboard"
    assert served_route(d.gw, "grouped", model="everything") == "alpha/m1"
