"""Claude Code 2.1.328 (`claude -p`) completes a file-writing task through modelpool (issue #17).

On an Anthropic route the attempt is native: the upstream gets Claude Code's own body (`context_management`,
`thinking`, `cache_control`, its tools) and its `anthropic-beta` header; the signed thinking it was sent comes
back verbatim on the next turn. On a chat-only route every turn is translated to Chat Completions.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from agents import MODEL, TASK, Run, assert_native_bodies, fleet_spec, gateway_config, run_claude
from tap import Tap

from gateway_server import GatewayServer
from modelpool.sim import CallRecord, FleetThread

pytestmark = pytest.mark.timeout(150)


@pytest.fixture(scope="module")
def ft() -> Iterator[FleetThread]:
    with FleetThread(fleet_spec()) as fleet:
        yield fleet


def agent_turns(calls: list[CallRecord], tool_names: set[str]) -> list[CallRecord]:
    """The main-loop calls: those that offer the task's tool (side calls such as titles offer none)."""

    def names(c: CallRecord) -> set[str]:
        tools = (c.body or {}).get("tools") or []
        return {t.get("name") or (t.get("function") or {}).get("name") for t in tools}

    return [c for c in calls if names(c) & tool_names]


def assert_task_done(run: Run) -> None:
    assert run.returncode == 0, run.explain()
    assert run.written == TASK.content, run.explain()
    result = json.loads(run.stdout)
    assert result["is_error"] is False and result["subtype"] == "success", run.explain()
    assert TASK.done_text in result["result"]


def test_claude_code_on_a_native_anthropic_route(ft: FleetThread, claude: Path) -> None:
    ft.reset_calls()
    with GatewayServer(gateway_config(ft, "anth")) as gw, Tap(gw.url) as tap:
        run = run_claude(claude, tap.url)
    assert_task_done(run)

    calls = ft.calls("anth")
    assert calls and all(c.dialect == "anthropic" and c.path.endswith("/messages") for c in calls), [
        (c.dialect, c.path) for c in calls
    ]
    turns = agent_turns(calls, {"Write"})
    assert len(turns) >= 2, f"Write offered upstream on {len(turns)} turn(s) of {len(calls)} calls"
    first, *rest = turns
    last = rest[-1]
    for call in (first, last):
        beta = call.headers.get("anthropic-beta", "")
        # native: the dialect headers are forwarded verbatim, the body keeps Claude Code's own fields
        assert "claude-code-20250219" in beta and "context-management-2025-06-27" in beta, call.headers
        assert call.headers.get("anthropic-version") == "2023-06-01"
        body = call.body or {}
        assert body["model"] == MODEL
        assert body.get("context_management") == {
            "edits": [{"type": "clear_thinking_20251015", "keep": "all"}]
        }
        assert body.get("thinking", {}).get("type") == "enabled"
        assert body.get("metadata", {}).get("user_id")
        assert any(b.get("cache_control") for b in body["system"] if isinstance(b, dict))
    # Every call, side calls included: the upstream body is the one Claude Code sent (the effort may be
    # rewritten for the route: `thinking` budget, `output_config`), with its anthropic-* headers.
    assert_native_bodies(tap.sent, calls, {"thinking", "output_config"}, "anthropic-")
    # The next turn carries the signed thinking block and the Write call back, then the tool result.
    history = (last.body or {})["messages"]
    assistant = next(m for m in history if m["role"] == "assistant")
    kinds = [b["type"] for b in assistant["content"]]
    assert kinds[0] == "thinking" and assistant["content"][0]["signature"], assistant
    assert "tool_use" in kinds
    results = [b for m in history if m["role"] == "user" for b in m["content"] if isinstance(b, dict)]
    assert any(b["type"] == "tool_result" for b in results)


def test_claude_code_on_a_chat_only_route(ft: FleetThread, claude: Path) -> None:
    ft.reset_calls()
    with GatewayServer(gateway_config(ft, "chat")) as gw:
        run = run_claude(claude, gw.url)
    assert_task_done(run)

    calls = ft.calls("chat")
    assert calls and all(c.dialect == "openai" and c.path.endswith("/chat/completions") for c in calls), [
        (c.dialect, c.path) for c in calls
    ]
    turns = agent_turns(calls, {"Write"})
    assert len(turns) >= 2, f"Write offered upstream on {len(turns)} turn(s) of {len(calls)} calls"
    first, *rest = turns
    tools = {t["function"]["name"]: t for t in (first.body or {})["tools"]}
    assert "Write" in tools and tools["Write"]["type"] == "function"
    assert not any(k.startswith("anthropic-") for k in first.headers)  # Anthropic headers stay home
    history = (rest[-1].body or {})["messages"]
    call_ids = [tc["id"] for m in history if m["role"] == "assistant" for tc in m.get("tool_calls") or []]
    tool_msgs = [m for m in history if m["role"] == "tool"]
    assert call_ids and tool_msgs and tool_msgs[-1]["tool_call_id"] in call_ids, history
