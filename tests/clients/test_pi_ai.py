"""pi-ai (`@mariozechner/pi-ai`, behind DeepSeek Harness's adapter) runs a tool loop through modelpool with
each of its `openai-completions`, `openai-responses` and `anthropic-messages` APIs, on every route kind:
native where the route speaks the API's dialect, translated otherwise (tests/clients/pi_agent.mjs)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from agents import ROUTES, TASK, fleet_spec, gateway_config, run_pi

from gateway_server import GatewayServer
from modelpool.sim import FleetThread

pytestmark = pytest.mark.timeout(120)
API_DIALECT = {
    "openai-completions": "openai",
    "openai-responses": "responses",
    "anthropic-messages": "anthropic",
}


@pytest.fixture(scope="module")
def ft() -> Iterator[FleetThread]:
    with FleetThread(fleet_spec()) as fleet:
        yield fleet


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize("api", sorted(API_DIALECT))
def test_pi_ai_tool_loop(ft: FleetThread, pi_ai: Path, api: str, route: str) -> None:
    ft.reset_calls()
    with GatewayServer(gateway_config(ft, route)) as gw:
        run, report = run_pi(api, gw.url)
    assert run.returncode == 0 and report is not None, run.explain()
    first, final = report["first"], report["final"]
    assert first["stopReason"] == "toolUse", first.get("errorMessage") or first
    call = next(p for p in first["content"] if p["type"] == "toolCall")
    assert call["name"] == "write_file" and call["arguments"]["content"] == TASK.content
    assert run.written == TASK.content
    assert report["events"].get("toolcall_end") == 1 and report["events"].get("done") == 1, report["events"]
    assert final is not None and final["stopReason"] == "stop", final
    assert "".join(p.get("text", "") for p in final["content"] if p["type"] == "text") == TASK.done_text

    calls = ft.calls(route)
    assert len(calls) == 2
    want = API_DIALECT[api]
    native = want in ROUTES[route]
    for c in calls:  # native when the route speaks the API's dialect, else one the route speaks
        assert c.dialect == want if native else c.dialect in ROUTES[route], (api, route, c.dialect, c.path)
