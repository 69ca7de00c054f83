"""The Sessions pages in Chromium (SPEC §11, issue #26): the list shows calls and cost so far and fits the
page at desktop (1400 px) and phone (390 px) width with long session ids, and a session's own page lists its
calls with route, attempts, switches, tokens, cost and outcome. Through the real server, real browser."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from dash_helpers import PHONE, Dash, admin, chat, served_route, shot, wait_for

from modelpool.sim import Fault

DESKTOP_WIDE = {"width": 1400, "height": 900}
# An id as long as a client may send (200 characters kept), with no break opportunity, and one with URL
# characters that the session page's link must carry.
LONG_ID = "agent-run-" + "x" * 190
ODD_ID = "team/a#run 1?x=y"


def expect(locator: Any) -> Any:
    from playwright.sync_api import expect as pw_expect  # a missing browser stack skips (dash fixture)

    return pw_expect(locator)


def fits(page: Any, viewport: dict[str, int], what: str) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= viewport["width"], f"{what}: the page is {width}px wide at {viewport['width']}px"


@pytest.mark.parametrize("viewport", [DESKTOP_WIDE, PHONE], ids=["desktop", "phone"])
def test_the_sessions_list_and_a_session_page_fit_with_long_ids(
    dash: Callable[..., Dash], viewport: dict[str, int]
) -> None:
    d = dash(viewport=viewport)
    page = d.page
    for sid in (LONG_ID, ODD_ID, "short"):
        served_route(d.gw, sid)
    served_route(d.gw, "short")
    wait_for(lambda: len(admin(d.gw, "/admin/sessions")["sessions"]) == 3, what="three sessions")
    d.goto("sessions")
    table = page.locator("#sessions-table")
    expect(table.locator("tbody tr")).to_have_count(3)
    short = table.locator('tr[data-session="short"]')
    expect(short.locator("td.calls")).to_have_text("2")
    expect(short.locator("td.cost")).to_have_text(re.compile(r"^\$\d"))
    long_row = table.locator(f'tr[data-session="{LONG_ID}"]')
    expect(long_row.locator("td.sid a")).to_have_attribute("title", LONG_ID)
    fits(page, viewport, "sessions list")
    name = "desktop" if viewport is DESKTOP_WIDE else "phone"
    shot(page, f"sessions-list-{name}")

    long_row.locator("td.sid a").click()
    expect(page.locator("#session-page")).to_have_attribute("data-session", LONG_ID)
    expect(page.locator("#session-calls tr.call")).to_have_count(1)
    fits(page, viewport, "long session page")

    page.locator("#session-back").click()
    table.locator(f'tr[data-session="{ODD_ID}"] td.sid a').click()
    expect(page.locator("#session-page")).to_have_attribute("data-session", ODD_ID)
    expect(page.locator("#session-calls tr.call td.route")).to_contain_text("alpha/m1")


def test_a_session_page_shows_its_failed_call_and_the_switch(
    dash: Callable[..., Dash], dash_fleet: Any
) -> None:
    d = dash(viewport=DESKTOP_WIDE, retries_per_route=0)
    page = d.page
    dash_fleet.set_faults("alpha", [Fault("server_error", status=503, times=2)])
    dash_fleet.set_faults("beta", [Fault("server_error", status=503, times=1)])
    assert chat(d.gw, "agent-run").status_code == 502  # alpha and beta fail: the call fails
    assert served_route(d.gw, "agent-run") == "beta/m1"  # alpha fails again (resting or not), beta answers
    page.goto(d.gw.url + "/#/sessions?id=agent-run")
    rows = page.locator("#session-calls tr.call")  # newest first
    expect(rows).to_have_count(2)
    expect(page.locator("#session-summary")).to_contain_text("2 calls (1 failed)")
    served, failed = rows.nth(0), rows.nth(1)
    expect(failed.locator("td.outcome")).to_have_text("failed")
    expect(failed.locator("td.route")).to_have_text("—")
    expect(failed.locator("td.attempts")).to_have_text("alpha/m1 (server) → beta/m1 (server)")
    expect(served.locator("td.outcome")).to_have_text("ok")
    expect(served.locator("td.route")).to_contain_text("beta/m1")
    shot(page, "session-page")
    page.goto(d.gw.url + "/#/sessions?id=nobody-at-all")
    expect(page.locator("#session-unknown")).to_be_visible()


def test_switches_on_the_session_page(dash: Callable[..., Dash], dash_fleet: Any) -> None:
    dash_fleet.set_faults("alpha", [Fault("server_error", status=503, times=1)])
    d = dash(viewport=DESKTOP_WIDE, retries_per_route=0)
    assert served_route(d.gw, "switchy") == "beta/m1"
    page = d.page
    page.goto(d.gw.url + "/#/sessions?id=switchy")
    row = page.locator("#session-calls tr.call").first
    expect(row.locator("td.route")).to_contain_text("beta/m1")
    expect(row.locator("td.attempts")).to_have_text("alpha/m1 (server) → beta/m1")
    expect(row.locator("td.switches")).to_have_text("alpha/m1 → beta/m1 (server)")
