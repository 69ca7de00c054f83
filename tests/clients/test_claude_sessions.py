"""Claude Code's session as the user sees it (SPEC §8, §11, issue #26): a real `claude -p` run through the
real gateway appears under its own session id (the uuid of `x-claude-code-session-id`, which `claude`
prints in its JSON result), never as its JSON `metadata.user_id`; `GET /admin/sessions/{id}` and the
dashboard's session page (real Chromium, desktop and phone, no sideways scrolling) list its calls with
tokens and cost."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from agents import TASK, fleet_spec, gateway_config, run_claude
from tap import Tap

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import FleetThread

pytestmark = pytest.mark.timeout(240)

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
PRICES = {"input": 3.0, "output": 15.0}  # USD per 1M tokens: every call has a cost to show
CHROMIUM = "/usr/bin/chromium"
VIEWPORTS = {"desktop": {"width": 1400, "height": 900}, "phone": {"width": 390, "height": 844}}


@pytest.fixture(scope="module")
def ft() -> Iterator[FleetThread]:
    with FleetThread(fleet_spec()) as fleet:
        yield fleet


def admin(gw: GatewayServer, path: str) -> Any:
    r = httpx.get(gw.url + path, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=15)
    assert r.status_code == 200, r.text
    return r.json()


def test_claude_codes_session_is_listed_under_its_own_id_with_calls_tokens_and_cost(
    ft: FleetThread, claude: Path
) -> None:
    cfg = gateway_config(ft, "anth")
    cfg["providers"][0]["prices"] = PRICES
    with GatewayServer(cfg) as gw:
        with Tap(gw.url) as tap:
            run = run_claude(claude, tap.url)
        assert run.returncode == 0 and run.written == TASK.content, run.explain()
        sid = json.loads(run.stdout)["session_id"]  # the id Claude Code shows for this session
        assert UUID.fullmatch(sid), sid
        messages = [s for s in tap.sent if s.path.split("?")[0].endswith("/v1/messages")]
        sent = {s.headers.get("x-claude-code-session-id") for s in messages}
        assert sent == {sid}, sent

        listed = admin(gw, "/admin/sessions")["sessions"]
        assert [s["session"] for s in listed] == [sid], listed  # one session, by its uuid, no JSON blob
        row = listed[0]
        assert row["calls"] >= 2 and row["cost_usd"] > 0 and row["route"] == "anth/agent-m", row

        one = admin(gw, f"/admin/sessions/{sid}")
        calls = one["calls"]
        api_calls = [s for s in tap.sent if s.path.split("?")[0].endswith("/v1/messages")]
        assert len(calls) == len(api_calls) == one["summary"]["calls"], (calls, len(api_calls))
        for c in calls:
            assert c["route"] == "anth/agent-m" and c["outcome"] == "ok", c
            assert c["attempts"] == [{"route": "anth/agent-m", "kind": None, "status": 200}], c
            assert c["tokens_in"] > 0 and c["tokens_out"] > 0 and c["cost_usd"] > 0, c
            assert c["latency_ms"] > 0 and c["dialect"] == "anthropic"
        streamed = [c for c in calls if c["stream"]]
        assert streamed and all(c["ttft_ms"] is not None for c in streamed), calls
        total = sum(c["cost_usd"] for c in calls)
        assert one["summary"]["cost_usd"] == pytest.approx(total), one["summary"]

        _dashboard_shows(gw, sid, len(calls))


def _dashboard_shows(gw: GatewayServer, sid: str, n_calls: int) -> None:
    try:
        from playwright.sync_api import expect, sync_playwright
    except ImportError:
        sync_playwright = None  # type: ignore[assignment]
    if sync_playwright is None or not Path(CHROMIUM).exists():
        message = f"the dashboard half needs playwright and {CHROMIUM} (apt-get install chromium)"
        if os.environ.get("MODELPOOL_REQUIRE_BROWSER"):  # CI: a missing browser fails, never skips
            pytest.fail(message)
        pytest.skip(message)

    expect.set_options(timeout=15_000)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            for name, viewport in VIEWPORTS.items():
                page = browser.new_context(viewport=viewport, locale="en-US").new_page()
                errors: list[str] = []
                page.on("pageerror", lambda exc, errors=errors: errors.append(str(exc)))
                page.goto(gw.url + "/")
                page.fill("#token", ADMIN_TOKEN)
                page.click("#login-submit")
                expect(page.locator("#nav")).to_be_visible()
                page.click('#nav a[data-page="sessions"]')
                row = page.locator(f'#sessions-table tr[data-session="{sid}"]')
                expect(row).to_be_visible()
                expect(row.locator("td.calls")).to_have_text(str(n_calls))
                expect(row.locator("td.cost")).to_have_text(re.compile(r"^\$0\.0*[1-9]"))
                _no_sideways_scroll(page, viewport, f"{name} sessions list")
                row.locator("td.sid a").click()
                expect(page.locator("#session-page")).to_have_attribute("data-session", sid)
                rows = page.locator("#session-calls tr.call")
                expect(rows).to_have_count(n_calls)
                first = rows.first
                expect(first.locator("td.route")).to_contain_text("anth/agent-m")
                expect(first.locator("td.tokens-in")).to_have_text(re.compile(r"^[1-9][\d,]*$"))
                expect(first.locator("td.cost")).to_have_text(re.compile(r"^\$0\.0*[1-9]"))
                expect(first.locator("td.outcome")).to_have_text("ok")
                if name == "desktop":
                    expect(first.locator("td.ttft")).to_be_visible()
                _no_sideways_scroll(page, viewport, f"{name} session page")
                shots = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
                shots.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(shots / f"session-{name}.png"), full_page=True)
                assert not errors, errors
                page.context.close()
        finally:
            browser.close()


def _no_sideways_scroll(page: Any, viewport: dict[str, int], what: str) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= viewport["width"], f"{what}: the page is {width}px wide at {viewport['width']}px"
