"""Every agent CLI on every kind of route, with no special settings (the pool's defaults): Claude Code, Codex
and Gemini CLI each create the task's file through the real gateway whether the only route speaks the
CLI's own dialect or must translate — the dialects each provider kind speaks by default (`openai`: Chat;
`anthropic`: Messages; `gemini`: the Gemini API and its OpenAI-compatible root; an env-detected OpenAI: Chat
and Responses) and a Gemini route restricted to the Gemini API. The other files test each pairing in depth
(bodies, ids, losses); this one checks the whole matrix holds, so a default that breaks one pairing is caught.

A route an operator restricts to Responses alone (`dialects: [responses]`) serves Responses clients only:
Messages and Gemini clients get a 400 in their own dialect saying so (README "Dialects: native first")."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import (
    CLIENT_KEY,
    MODEL,
    TASK,
    Run,
    fleet_spec,
    run_claude,
    run_codex,
    run_gemini,
)

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import FleetThread

pytestmark = pytest.mark.timeout(200)

# route name → (sim provider, the dialects the gateway is told it speaks)
ROUTES: dict[str, tuple[str, list[str]]] = {
    "openai-kind": ("chat", ["openai"]),
    "anthropic-kind": ("anth", ["anthropic"]),
    "gemini-kind": ("gem", ["gemini", "openai"]),
    "gemini-api-only": ("gem", ["gemini"]),
    "openai-chat-and-responses": ("resp", ["openai", "responses"]),
}
RUNNERS: dict[str, Callable[[Path, str], Run]] = {
    "claude": run_claude,
    "codex": run_codex,
    "gemini": run_gemini,
}


@pytest.fixture(scope="module")
def ft() -> Iterator[FleetThread]:
    with FleetThread(fleet_spec()) as fleet:
        yield fleet


def defaults_config(ft: FleetThread, provider: str, dialects: list[str]) -> dict[str, Any]:
    """One route, a client key, the CLIs' own model names aliased to the pool, nothing else set."""
    cfg = ft.to_config(
        providers=[provider],
        state={"backend": "memory"},
        server={"admin_token": ADMIN_TOKEN, "api_keys": [CLIENT_KEY]},
        aliases={"claude-*": MODEL, "gpt-*": MODEL},
    )
    cfg["providers"][0]["dialects"] = dialects
    return cfg


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize("cli", sorted(RUNNERS))
def test_the_cli_creates_its_file_on_the_route(
    ft: FleetThread, route: str, cli: str, request: pytest.FixtureRequest
) -> None:
    binary: Path = request.getfixturevalue(cli)
    provider, dialects = ROUTES[route]
    ft.reset_calls()
    with GatewayServer(defaults_config(ft, provider, dialects)) as gw:
        run = RUNNERS[cli](binary, gw.url)
    assert run.returncode == 0, run.explain()
    assert run.written == TASK.content, run.explain()
    served = ft.calls(provider)
    assert served and all(c.status == 200 for c in served), [(c.path, c.status) for c in served]
    assert {c.dialect for c in served} <= set(dialects), [c.dialect for c in served]


@pytest.mark.parametrize("cli", ["claude", "gemini"])
def test_a_responses_only_route_refuses_other_dialects_clearly(
    ft: FleetThread, cli: str, request: pytest.FixtureRequest
) -> None:
    """No translation writes the Responses API: a Messages or Gemini client gets its dialect's 400 naming the
    route and why, at once (not a retry loop, not a 5xx), and nothing reaches the route."""
    binary: Path = request.getfixturevalue(cli)
    ft.reset_calls()
    with GatewayServer(defaults_config(ft, "resp", ["responses"])) as gw:
        run = RUNNERS[cli](binary, gw.url)
    assert run.returncode != 0 and run.written is None, run.explain()
    said = run.stdout + run.stderr
    assert "400" in said and "speaks responses" in said and "cannot be translated" in said, run.explain()
    assert ft.calls("resp") == []
