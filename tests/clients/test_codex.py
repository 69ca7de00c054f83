"""Codex CLI 0.171.0 (`codex exec`) completes a file-writing task through modelpool (issue #17).

Codex offers its file editor as a freeform `custom` tool (`apply_patch`, a Lark grammar) next to function
tools and the `web_search` server tool, and asks for `reasoning.encrypted_content` with `store: false`.
On a Responses route the attempt is native (the custom tool reaches the upstream as it is); on a chat-only
or Anthropic-only route `apply_patch` travels as a function tool and its call comes back to Codex as a
`custom_tool_call`. Codex always offers `web_search`, which no translation can carry, so the translating
pools run with `lossy_translation: allow` (the README says so).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from agents import MODEL, TASK, Run, assert_native_bodies, fleet_spec, gateway_config, run_codex
from tap import Tap

from gateway_server import GatewayServer
from modelpool.sim import CallRecord, FleetThread

pytestmark = pytest.mark.timeout(150)


@pytest.fixture(scope="module")
def ft() -> Iterator[FleetThread]:
    with FleetThread(fleet_spec()) as fleet:
        yield fleet


def tool_names(call: CallRecord) -> set[str]:
    out = set()
    for t in (call.body or {}).get("tools") or []:
        out.add(t.get("name") or (t.get("function") or {}).get("name") or t.get("type"))
    return out


def patch_turns(calls: list[CallRecord]) -> list[CallRecord]:
    return [c for c in calls if "apply_patch" in tool_names(c)]


def assert_task_done(run: Run) -> None:
    assert run.returncode == 0, run.explain()
    assert run.written == TASK.content, run.explain()
    assert TASK.done_text in run.stdout, run.explain()


def test_codex_on_a_native_responses_route(ft: FleetThread, codex: Path) -> None:
    ft.reset_calls()
    with GatewayServer(gateway_config(ft, "resp")) as gw, Tap(gw.url) as tap:
        run = run_codex(codex, tap.url)
    assert_task_done(run)

    calls = ft.calls("resp")
    assert calls and all(c.dialect == "responses" and c.path.endswith("/responses") for c in calls), [
        (c.dialect, c.path) for c in calls
    ]
    turns = patch_turns(calls)
    offered = [sorted(tool_names(c)) for c in calls]
    assert len(turns) >= 2, f"apply_patch offered upstream on {len(turns)} turn(s); tools sent: {offered}"
    first, *rest = turns
    for call in (first, rest[-1]):
        body = call.body or {}
        assert body["model"] == MODEL
        tools = {t.get("name") or t["type"]: t for t in body["tools"]}
        assert tools["apply_patch"]["type"] == "custom"
        assert tools["apply_patch"]["format"]["type"] == "grammar"
        assert tools["web_search"]["type"] == "web_search"
        assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
        assert body["prompt_cache_key"] and body["text"]["verbosity"] == "low"
        assert call.headers.get("originator") == "codex_exec" or "session-id" in call.headers
    # The upstream body is the one Codex sent (the effort, `reasoning`, may be rewritten for the route).
    assert_native_bodies(tap.sent, calls, {"reasoning"}, "openai-")
    items = (rest[-1].body or {})["input"]
    kinds = [i.get("type") for i in items]
    assert "custom_tool_call" in kinds and "custom_tool_call_output" in kinds, kinds


@pytest.mark.parametrize(
    ("route", "dialect", "path"),
    [("chat", "openai", "/chat/completions"), ("anth", "anthropic", "/messages")],
    ids=["chat-only", "anthropic-only"],
)
def test_codex_on_a_translating_route(
    ft: FleetThread, codex: Path, route: str, dialect: str, path: str
) -> None:
    ft.reset_calls()
    with GatewayServer(gateway_config(ft, route, lossy_translation="allow")) as gw:
        run = run_codex(codex, gw.url)
    assert_task_done(run)

    calls = ft.calls(route)
    assert calls and all(c.dialect == dialect and c.path.endswith(path) for c in calls), [
        (c.dialect, c.path) for c in calls
    ]
    turns = patch_turns(calls)
    offered = [sorted(tool_names(c)) for c in calls]
    assert len(turns) >= 2, f"apply_patch offered upstream on {len(turns)} turn(s); tools sent: {offered}"
    first, *rest = turns
    body = first.body or {}
    if dialect == "openai":
        tools = {t["function"]["name"]: t for t in body["tools"]}
        assert tools["apply_patch"]["type"] == "function"
        history = (rest[-1].body or {})["messages"]
        assert any(m["role"] == "tool" for m in history), history
    else:
        tools = {t["name"]: t for t in body["tools"]}
        assert "input_schema" in tools["apply_patch"]
        history = (rest[-1].body or {})["messages"]
        blocks = [b for m in history if isinstance(m["content"], list) for b in m["content"]]
        assert any(b.get("type") == "tool_result" for b in blocks), history
    assert "web_search" not in tools  # dropped (and reported in x-modelpool-dropped), not sent
