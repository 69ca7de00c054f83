"""The Models roster at the size of the rotator seed's live scan (906 rows: 12 chat channels with 453
models, and a `-vision` twin of each), in real Chromium against `modelpool sim --preset roster`.

What issue #21's rendering changes could break: every row drawn, folds that hide and show a channel's or a
section's rows without rebuilding them, a refresh that rebuilds only the channels whose rows changed (the
reader's folds and the open lists survive it), switches served by one delegated listener and re-enabled
after a flip, and rows off screen (skipped by `content-visibility`) still reachable. No timing here:
bench/dashboard_roster.py measures."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from dash_helpers import DESKTOP, Dash, admin, dashboard_config

from gateway_server import GatewayServer
from modelpool.sim import FleetThread
from modelpool.sim.presets import preset
from modelpool.sim.roster_fleet import ROSTER_CHANNELS

ROWS = 906
CHAT_ROWS = sum(n for _, _, n in ROSTER_CHANNELS)


def expect(locator: Any) -> Any:
    from playwright.sync_api import expect as pw_expect

    return pw_expect(locator)


@pytest.fixture(scope="module")
def roster_fleet() -> Iterator[FleetThread]:
    with FleetThread(preset("roster")) as ft:
        yield ft


@pytest.fixture
def big(browser: Any, roster_fleet: FleetThread) -> Iterator[Dash]:
    """A logged-in page on a gateway that discovered the 24 providers' model lists (no `models:`)."""
    cfg = dashboard_config(roster_fleet, exclude_models=[excluded_route(roster_fleet)])
    for provider in cfg["providers"]:
        provider.pop("models")
        provider.pop("model_info", None)
    with GatewayServer(cfg) as gw:
        context = browser.new_context(viewport=DESKTOP, locale="en-US")
        try:
            d = Dash(gw, context.new_page())
            d.login()
            d.goto("models")
            expect(rows(d)).to_have_count(ROWS)
            yield d
        finally:
            context.close()
    assert not d.errors, f"uncaught errors in the page: {d.errors}"


def excluded_route(ft: FleetThread) -> str:
    """One route the config file keeps out (a structural reason: its switch stays disabled)."""
    return f"deepseek/{ft.fleet.spec.provider('deepseek').models[0].id}"


def rows(d: Dash, where: str = "") -> Any:
    return d.page.locator(f"#roster-root {where} .row".replace("  ", " "))


VISIBLE_ROWS = "() => [...document.querySelectorAll('#roster-root .row')].filter((r) => r.checkVisibility())"


def visible_rows(d: Dash) -> int:
    """Rows shown (a row skipped by `content-visibility: auto` off screen still counts: it is displayed)."""
    return int(d.page.evaluate(VISIBLE_ROWS + ".length"))


def mark(d: Dash, selector: str) -> None:
    """Tag a DOM node: the tag survives only as long as the node is not rebuilt."""
    d.page.eval_on_selector(selector, "(el) => { el.dataset.testMark = 'kept'; }")


def test_all_906_rows_render_with_tallies_from_the_rows(big: Dash) -> None:
    expect(rows(big)).to_have_count(ROWS)
    expect(rows(big, '.section[data-section="chat"]')).to_have_count(CHAT_ROWS)
    expect(rows(big, '.section[data-section="vision"]')).to_have_count(ROWS - CHAT_ROWS)
    expect(big.page.locator(".channel")).to_have_count(2 * len(ROSTER_CHANNELS))
    payload = admin(big.gw, "/admin/models")
    assert len(payload["models"]) == ROWS
    expect(big.page.locator('.section[data-section="chat"] .section-head .tally')).to_have_text(
        f"{CHAT_ROWS} models · ok {CHAT_ROWS - 1} · cooling 0 · off 1"
    )
    expect(big.page.locator('.channel[data-channel="siliconflow"] .fold')).to_contain_text(
        "硅基流动 (siliconflow)"
    )
    assert visible_rows(big) == CHAT_ROWS  # the vision section starts folded
    # the last row is far below the fold (skipped by content-visibility) yet reachable and drawn
    last = rows(big, '.section[data-section="chat"]').last
    last.scroll_into_view_if_needed()
    expect(last).to_be_visible()
    expect(last.locator(".model")).not_to_be_empty()


def test_folds_hide_and_show_rows_without_rebuilding_them(big: Dash) -> None:
    page = big.page
    silicon = page.locator('.channel[data-channel="siliconflow"] > .rows')
    first = '.channel[data-channel="siliconflow"] .row'
    mark(big, first)
    page.click('[data-fold="channel:siliconflow"]')
    expect(silicon).to_be_hidden()
    expect(page.locator('[data-fold="channel:siliconflow"]')).to_have_attribute("aria-expanded", "false")
    expect(page.locator('[data-fold="channel:siliconflow"] .chev')).to_have_text("▶")
    assert visible_rows(big) == CHAT_ROWS - 65
    page.click('[data-fold="channel:siliconflow"]')
    expect(silicon).to_be_visible()
    expect(page.locator(first).first).to_have_attribute("data-test-mark", "kept")  # the same nodes

    page.click('[data-fold="section:vision"]')
    expect(page.locator('.section[data-section="vision"] > .fold-body')).to_be_visible()
    expect(page.locator('.channel[data-channel="amd-vision"] .fold')).to_contain_text("wraps amd")
    assert visible_rows(big) == CHAT_ROWS  # a twin channel starts folded inside its section
    page.click('[data-fold="channel:amd-vision"]')
    assert visible_rows(big) == CHAT_ROWS + 30
    page.click("#collapse-all")
    assert visible_rows(big) == 0
    expect(page.locator(".roster > .fold-body")).to_be_visible()  # collapse-all keeps the roster open
    page.click("#expand-all")
    assert visible_rows(big) == ROWS
    expect(page.locator(first).first).to_have_attribute("data-test-mark", "kept")


def test_a_refresh_rebuilds_only_the_channel_that_changed(big: Dash) -> None:
    page = big.page
    page.click('[data-fold="channel:amd"]')  # the reader's own fold must survive the refresh
    expect(page.locator('.channel[data-channel="amd"] > .rows')).to_be_hidden()  # folded before the call
    page.locator(".lists summary").click()  # and so must the open lists
    mark(big, '.channel[data-channel="amd-vision"]')
    pool = next(r["pool"] for r in admin(big.gw, "/admin/models")["models"] if r["on"])
    response = httpx.post(
        big.gw.url + "/v1/chat/completions",
        json={"model": pool, "messages": [{"role": "user", "content": "hello"}]},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    route = response.headers["x-modelpool-route"]
    channel = route.split("/", 1)[0]
    served = page.locator(f'.row[data-route="{route}"]')
    expect(served).to_have_attribute("data-state", "ok")  # the served event (or the 5 s poll) refreshed
    expect(served.locator(".detail")).to_contain_text("1/1")
    assert channel not in ("amd", "amd-vision"), "the served route must be in another channel than the marked"
    expect(page.locator('.channel[data-channel="amd-vision"]')).to_have_attribute("data-test-mark", "kept")
    expect(page.locator('.channel[data-channel="amd"] > .rows')).to_be_hidden()
    expect(page.locator(".lists")).to_have_attribute("open", "")


def test_switches_work_through_the_one_listener_and_come_back_enabled(
    big: Dash, roster_fleet: FleetThread
) -> None:
    page = big.page
    locked = page.locator('.row[data-reason="excluded"] .row-switch')
    expect(locked).to_have_count(1)
    expect(locked).to_be_disabled()
    row = page.locator(".channel[data-channel='groq'] .row").first
    key = row.get_attribute("data-route")
    row.locator(".row-switch").click()
    expect(page.locator(f'.row[data-route="{key}"]')).to_have_attribute("data-state", "off")
    expect(page.locator(f'.row[data-route="{key}"] .row-switch')).to_have_text("Switch on")
    expect(page.locator("#roster-status")).to_have_text("Saved")
    # every other switch is usable again; the structurally locked one stays locked
    expect(page.locator(".channel[data-channel='together'] .row-switch").first).to_be_enabled()
    expect(page.locator(".channel-switch").first).to_be_enabled()
    expect(locked).to_be_disabled()
    expect(locked).to_have_attribute("data-route", excluded_route(roster_fleet))

    together = page.locator('.channel[data-channel="together"]')
    together.locator(".channel-switch").click()
    expect(together).to_have_attribute("data-closed", "true")
    expect(together.locator(".channel-switch")).to_have_text("Open channel")
    expect(together.locator(".rows")).to_be_visible()  # closing is not folding
    assert admin(big.gw, "/admin/models")["lists"]["pool.disabled_providers"]["value"] == ["together"]


def test_chinese_labels_on_the_big_roster(big: Dash) -> None:
    page = big.page
    page.select_option("#lang", "zh")
    expect(page.locator('[data-fold="section:chat"]')).to_contain_text("对话渠道")
    expect(rows(big)).to_have_count(ROWS)
    expect(page.locator('.section[data-section="vision"] .section-head .tally')).to_have_text(
        f"{ROWS - CHAT_ROWS} 个 · 可用 0 · 冷却 0 · 关闭 {ROWS - CHAT_ROWS}"
    )
    page.click("#expand-all")
    expect(page.locator("#expand-all")).to_have_text("全部展开")
    assert visible_rows(big) == ROWS
    page.select_option("#lang", "en")
