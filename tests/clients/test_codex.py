"""Codex CLI 0.171.0 (`codex exec`) completes a file-writing task through modelpool (issues #17, #26).

Codex offers its file editor as a freeform `custom` tool (`apply_patch`, a Lark grammar) next to function
tools, `tool_search` (which Codex runs itself, `execution: "client"`) and the `web_search` server tool, and
asks for `reasoning.encrypted_content` with `store: false`. On a Responses route the attempt is native (the
custom tool reaches the upstream as it is); on a chat-only or Anthropic-only route `apply_patch` and
`tool_search` travel as function tools and `apply_patch`'s call comes back to Codex as a `custom_tool_call`.
`web_search` needs OpenAI's servers: with no `lossy_translation` setting it is left out and named (the
`dropped` field of the call log line, `modelpool_translation_dropped_total`); under `refuse` it is a 400.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest
from agents import MODEL, TASK, Run, assert_native_bodies, fleet_spec, gateway_config, run_codex
from tap import Tap

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import CallRecord, FleetThread
from serve_process import serve_process

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


TRANSLATING = pytest.mark.parametrize(
    ("route", "dialect", "path"),
    [("chat", "openai", "/chat/completions"), ("anth", "anthropic", "/messages")],
    ids=["chat-only", "anthropic-only"],
)


def call_lines(stderr: str) -> list[dict[str, object]]:
    lines = [orjson.loads(ln) for ln in stderr.splitlines() if ln.startswith("{")]
    return [ln for ln in lines if ln.get("logger") == "modelpool.calls"]


@TRANSLATING
def test_codex_on_a_translating_route(
    ft: FleetThread, codex: Path, tmp_path: Path, route: str, dialect: str, path: str
) -> None:
    """Out of the box (no `lossy_translation`): Codex works on a route that must translate."""
    ft.reset_calls()
    cfg = gateway_config(ft, route)
    assert "lossy_translation" not in cfg["pool"]
    with serve_process(cfg, tmp_path, "--log-format", "json") as gw:
        run = run_codex(codex, gw.url)
        auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        metrics = httpx.get(gw.url + "/metrics", headers=auth, timeout=10).text
        stderr = gw.stop()
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
    assert "tool_search" in tools  # Codex runs the search itself: carried as a function
    assert "web_search" not in tools  # needs OpenAI's servers: left out, and named below

    lines = [ln for ln in call_lines(stderr) if ln.get("status") == 200 and ln.get("route")]
    assert len(lines) >= 2, stderr[-3000:]
    for line in lines:
        assert line["dropped"] and "tools[web_search]" in line["dropped"], line  # type: ignore[operator]
        assert "tools[tool_search]" not in line["dropped"], line  # type: ignore[operator]
    counted = [ln for ln in metrics.splitlines() if ln.startswith("modelpool_translation_dropped_total{")]
    assert any('field="tools[web_search]"' in ln for ln in counted), counted
    assert not any("tool_search" in ln for ln in counted), counted


@TRANSLATING
def test_codex_gets_a_400_under_refuse(
    ft: FleetThread, codex: Path, tmp_path: Path, route: str, dialect: str, path: str
) -> None:
    """`lossy_translation: refuse`: the hosted tool no route can run refuses the call, naming it."""
    ft.reset_calls()
    with serve_process(gateway_config(ft, route, lossy_translation="refuse"), tmp_path) as gw:
        run = run_codex(codex, gw.url)
        stderr = gw.stop()
    assert run.returncode != 0 and run.written is None, run.explain()
    assert ft.calls(route) == []  # refused before any upstream attempt
    said = run.stdout + run.stderr
    assert "400" in said and "tools[web_search]" in said and "lossy_translation" in said, run.explain()
    lines = [ln for ln in call_lines(stderr) if ln.get("dialect") == "responses"]
    assert lines and all(ln["status"] == 400 and not ln.get("route") for ln in lines), lines
