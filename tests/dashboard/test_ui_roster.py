"""The dashboard in real Chromium, part 1: login, the Overview's state badges, the Models roster (channel
and row switches that the next call follows, the three fold levels), language and a phone-width layout.
Every page this file visits is saved to artifacts/screenshots/."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from dash_helpers import PHONE, Dash, in_force, served_route, shot

from gateway_server import ADMIN_TOKEN


def expect(locator: Any) -> Any:
    from playwright.sync_api import expect as pw_expect

    return pw_expect(locator)


def test_login_rejects_a_wrong_token_then_lets_the_right_one_in(dash: Callable[..., Dash]) -> None:
    d = dash(login=False)
    page = d.page
    page.goto(d.gw.url + "/")
    expect(page.locator("#login")).to_be_visible()
    shot(page, "login")
    page.fill("#token", "not-the-token")
    page.click("#login-submit")
    expect(page.locator("#login-error")).to_be_visible()
    d.login(ADMIN_TOKEN)
    expect(page.locator("#nav a.active")).to_have_attribute("data-page", "overview")
    # the token itself never reaches page scripts: the cookie is HttpOnly
    assert ADMIN_TOKEN not in page.evaluate("document.cookie")


def test_overview_shows_the_pools_state_badges(dash: Callable[..., Dash]) -> None:
    d = dash()
    assert served_route(d.gw, "warm") == "alpha/m1"
    page = d.page
    page.reload()
    pool = page.locator('.pool[data-pool="m1"]')
    expect(pool.locator('.badge[data-route="alpha/m1"]')).to_have_attribute("data-state", "ok")
    expect(pool.locator('.badge[data-route="beta/m1"]')).to_have_attribute("data-state", "unknown")
    expect(pool.locator('tr[data-route="beta/m1"] .provider')).to_have_text("硅基流动")
    expect(page.locator("#period-now")).to_have_text(re.compile("^(peak|idle)$"))
    expect(page.locator("#holiday-card")).to_contain_text("bundled snapshot")
    shot(page, "overview")


def test_channel_off_and_row_back_on_steer_the_next_call(dash: Callable[..., Dash]) -> None:
    d = dash()
    page = d.page
    d.goto("models")
    alpha = page.locator('.channel[data-channel="alpha"]')
    expect(alpha.locator(".fold")).to_contain_text("Alpha Cloud (alpha)")
    expect(page.locator('.channel[data-channel="beta"] .fold')).to_contain_text("硅基流动 (beta)")
    assert served_route(d.gw, "before") == "alpha/m1"

    alpha.locator(".channel-switch").click()
    expect(alpha).to_have_attribute("data-closed", "true")
    expect(alpha.locator(".channel-switch")).to_have_text("Open channel")
    expect(alpha.locator('.row[data-route="alpha/m1"]')).to_have_attribute("data-state", "off")
    expect(alpha.locator(".tally")).to_have_text("1 model · ok 0 · cooling 0 · off 1")
    assert served_route(d.gw, "after-close") == "beta/m1"  # the next call avoids the closed channel
    assert in_force(d.gw, "pool.disabled_providers")["layer"] == "dashboard"

    alpha.locator('.row[data-route="alpha/m1"] .row-switch').click()
    expect(alpha.locator('.row[data-route="alpha/m1"]')).not_to_have_attribute("data-state", "off")
    # the channel keeps its own flag: still closed, still offering to reopen
    expect(alpha).to_have_attribute("data-closed", "true")
    expect(alpha.locator(".channel-switch")).to_have_text("Open channel")
    assert served_route(d.gw, "after-row") == "alpha/m1"  # the row switched back on wins
    assert in_force(d.gw, "pool.enabled")["value"] == ["alpha/m1"]
    shot(page, "models")


def test_roster_folds_at_three_independent_levels(dash: Callable[..., Dash]) -> None:
    d = dash()
    page = d.page
    d.goto("models")
    chat = page.locator('.section[data-section="chat"]')
    vision = page.locator('.section[data-section="vision"]')
    alpha_rows = page.locator('.channel[data-channel="alpha"] > .rows')
    beta_rows = page.locator('.channel[data-channel="beta"] > .rows')
    expect(chat.locator("> .fold-body")).to_be_visible()
    expect(vision.locator("> .fold-body")).to_be_hidden()  # the vision section starts folded
    expect(vision.locator(".section-head .tally")).to_have_text("1 model · ok 0 · cooling 0 · off 1")

    # a channel folds on its own; its neighbour stays open
    page.click('[data-fold="channel:alpha"]')
    expect(alpha_rows).to_be_hidden()
    expect(beta_rows).to_be_visible()
    # folding and unfolding the section keeps the channel's own state
    page.click('[data-fold="section:chat"]')
    expect(chat.locator("> .fold-body")).to_be_hidden()
    expect(chat.locator(".section-head .tally")).to_have_text("3 models · ok 3 · cooling 0 · off 0")
    page.click('[data-fold="section:chat"]')
    expect(beta_rows).to_be_visible()
    expect(alpha_rows).to_be_hidden()
    # the roster as a whole
    page.click('[data-fold="roster"]')
    expect(page.locator(".roster > .fold-body")).to_be_hidden()
    page.click('[data-fold="roster"]')
    expect(page.locator(".roster > .fold-body")).to_be_visible()

    page.click("#expand-all")
    twin = page.locator('.channel[data-channel="alpha-vision"]')
    expect(twin.locator('.row[data-route="alpha-vision/m1"]')).to_be_visible()
    expect(twin.locator('.row[data-route="alpha-vision/m1"]')).to_have_attribute("data-reason", "vision")
    expect(twin.locator(".fold")).to_contain_text("wraps alpha")
    expect(twin.locator(".channel-switch")).to_have_count(0)  # a vision channel has no channel switch
    expect(alpha_rows).to_be_visible()
    shot(page, "models-expanded")
    page.click("#collapse-all")
    expect(chat.locator("> .fold-body")).to_be_hidden()
    expect(vision.locator("> .fold-body")).to_be_hidden()
    expect(page.locator(".roster > .fold-body")).to_be_visible()
    page.click('[data-fold="section:chat"]')
    expect(alpha_rows).to_be_hidden()  # collapse-all folded the channels too
    expect(beta_rows).to_be_hidden()


def test_language_switch_is_remembered(dash: Callable[..., Dash]) -> None:
    d = dash()
    page = d.page
    page.select_option("#lang", "zh")
    expect(page.locator('#nav a[data-page="overview"]')).to_have_text("概览")
    d.goto("models")
    expect(page.locator('[data-fold="section:chat"]')).to_contain_text("对话渠道")
    expect(page.locator('.channel[data-channel="alpha"] .channel-switch')).to_have_text("关闭本渠道")
    page.reload()
    expect(page.locator('#nav a[data-page="models"]')).to_have_text("模型列表")
    expect(page.locator('[data-fold="section:vision"]')).to_contain_text("识图模式")
    shot(page, "models-zh")
    page.select_option("#lang", "en")
    expect(page.locator('#nav a[data-page="models"]')).to_have_text("Models")


def test_phone_width_drops_the_secondary_columns(dash: Callable[..., Dash]) -> None:
    d = dash(viewport=PHONE)
    served_route(d.gw, "warm")
    page = d.page
    page.reload()
    first = page.locator('.pool[data-pool="m1"] table')
    expect(first.locator('.badge[data-route="alpha/m1"]')).to_be_visible()
    expect(first.locator("th.col-secondary").first).to_be_hidden()  # TTFT
    expect(first.locator('tr[data-route="alpha/m1"] td.col-secondary').first).to_be_hidden()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"] + 1, f"the page scrolls sideways on a phone ({width}px)"
    shot(page, "phone-overview")
    d.goto("models")
    expect(page.locator('.row[data-route="alpha/m1"] .row-switch')).to_be_visible()
    shot(page, "phone-models")
    d.goto("ranking")
    table = page.locator("#ranking-table")
    expect(table.locator("tbody tr").first).to_be_visible()
    expect(table.locator("th.col-secondary").first).to_be_hidden()  # TTFT and uptime
    expect(table.locator("th.col-secondary").last).to_be_hidden()
    shot(page, "phone-ranking")
