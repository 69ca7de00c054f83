"""Gemini CLI 0.61.0 (`gemini -p … --approval-mode yolo`) creates a file through modelpool (issue #27).

Gemini CLI speaks the Gemini API (`:streamGenerateContent?alt=sse`, `x-goog-api-key`, function
declarations with `parametersJsonSchema`, `thinkingConfig`). On a `gemini` route the attempt is native
(the tap checks its body reaches the upstream unchanged, byte for byte once parsed); on a chat-only or an
Anthropic-only route the request is translated, the `write_file` call comes back as a Gemini
`functionCall` with its id, and the stream ends the way Gemini CLI requires (finishReason, text).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from agents import CLIENT_KEY, MODEL, PROMPT, TASK, Run, fleet_spec, gateway_config, run_gemini
from tap import Tap

from gateway_server import GatewayServer
from modelpool.sim import AgentTask, CallRecord, FleetSpec, FleetThread, SimModel, SimProvider

pytestmark = pytest.mark.timeout(200)


@pytest.fixture(scope="module")
def ft() -> Iterator[FleetThread]:
    with FleetThread(fleet_spec()) as fleet:
        yield fleet


def assert_task_done(run: Run) -> None:
    assert run.returncode == 0, run.explain()
    assert run.written == TASK.content, run.explain()
    assert TASK.done_text in run.stdout, run.explain()


def declared(call: CallRecord) -> set[str]:
    body = call.body or {}
    names = {(t.get("function") or {}).get("name") or t.get("name") for t in body.get("tools") or []}
    for tool in body.get("tools") or []:
        names |= {d["name"] for d in tool.get("functionDeclarations") or []}
    return names


def test_gemini_cli_on_a_native_gemini_route(ft: FleetThread, gemini: Path) -> None:
    ft.reset_calls()
    with GatewayServer(gateway_config(ft, "gem")) as gw, Tap(gw.url) as tap:
        run = run_gemini(gemini, tap.url)
    assert_task_done(run)
    calls = ft.calls("gem")
    assert len(calls) >= 2, [c.path for c in calls]
    assert all(
        c.dialect == "gemini" and c.path == f"/v1beta/models/{MODEL}:streamGenerateContent" for c in calls
    )
    assert all(c.query == "alt=sse" for c in calls)
    sent = [s for s in tap.sent if ":streamGenerateContent" in s.path]
    assert len(sent) == len(calls), ([s.path for s in tap.sent], [c.path for c in calls])
    for s, c in zip(sent, calls, strict=True):
        assert c.body == s.body  # the body Gemini CLI sent, every field, reached the route unchanged
        assert c.headers.get("x-goog-api-client") == s.headers.get("x-goog-api-client")
        # The client's key never goes upstream (the sim provider has none of its own).
        assert not c.secret_headers and CLIENT_KEY not in str(c.headers)
    first = calls[0].body or {}
    assert "write_file" in declared(calls[0])
    decl = next(
        d for t in first["tools"] for d in t.get("functionDeclarations") or [] if d["name"] == "write_file"
    )
    assert "parametersJsonSchema" in decl
    last = calls[-1].body or {}
    parts = [p for content in last["contents"] for p in content["parts"]]
    calls_made = [p["functionCall"] for p in parts if "functionCall" in p]
    answers = [p["functionResponse"] for p in parts if "functionResponse" in p]
    assert calls_made and answers and calls_made[-1]["id"] == answers[-1]["id"], (calls_made, answers)


@pytest.mark.parametrize(
    ("route", "path", "dialect"),
    [("chat", "/chat/completions", "openai"), ("anth", "/messages", "anthropic")],
)
def test_gemini_cli_on_a_translated_route(
    ft: FleetThread, gemini: Path, route: str, path: str, dialect: str
) -> None:
    ft.reset_calls()
    with GatewayServer(gateway_config(ft, route)) as gw:
        run = run_gemini(gemini, gw.url)
    assert_task_done(run)
    calls = ft.calls(route)
    assert len(calls) >= 2 and all(c.dialect == dialect and c.path.endswith(path) for c in calls)
    assert "write_file" in declared(calls[0])
    # The call's id went to Gemini CLI and came back with its result: the route sees its own id.
    last = calls[-1].body or {}
    if dialect == "openai":
        ids = [tc["id"] for m in last["messages"] for tc in m.get("tool_calls") or []]
        results = [m["tool_call_id"] for m in last["messages"] if m["role"] == "tool"]
    else:
        blocks = [b for m in last["messages"] if isinstance(m["content"], list) for b in m["content"]]
        ids = [b["id"] for b in blocks if b["type"] == "tool_use"]
        results = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
    assert ids and results[-1] == ids[-1], (ids, results)


def test_gemini_cli_takes_a_reasoning_only_answer_at_once(gemini: Path) -> None:
    """A chat route whose model answers with its reasoning and no text: Gemini CLI would take an empty
    answer for a broken stream and ask again (four times, with a nudge). modelpool's note is the answer's
    text, so the CLI asks once, prints it and exits 0."""
    thinker = SimModel(MODEL, agent=AgentTask(path=None), reasoning_tokens=3, output_tokens=0)
    spec = FleetSpec([SimProvider("chat", kind="openai", models=[thinker], ttft=0.005, tps=2000.0)])
    with FleetThread(spec) as fleet:
        with GatewayServer(gateway_config(fleet, "chat")) as gw, Tap(gw.url) as tap:
            run = run_gemini(gemini, tap.url, prompt="Say hi")
        upstream = [c for c in fleet.calls("chat") if (c.body or {}).get("stream")]
    assert run.returncode == 0, run.explain()
    assert "[modelpool: the model returned its reasoning but no answer text]" in run.stdout, run.explain()
    streams = [s for s in tap.sent if ":streamGenerateContent" in s.path]
    assert len(streams) == 1 and len(upstream) == 1, ([s.path for s in tap.sent], run.explain())


def sessions(gw: GatewayServer) -> dict[str, dict[str, Any]]:
    """Session id → its `GET /admin/sessions/{id}` page, once the history book has written every call
    (a background task stores them every 0.5 s)."""
    time.sleep(1.2)
    listed = httpx.get(f"{gw.url}/admin/sessions", headers=gw.admin_headers()).json()["sessions"]
    pages = [httpx.get(f"{gw.url}/admin/sessions/{s['session']}", headers=gw.admin_headers()) for s in listed]
    return {s["session"]: p.json() for s, p in zip(listed, pages, strict=True)}


def test_gemini_cli_runs_are_sessions_of_their_own(ft: FleetThread, gemini: Path) -> None:
    """Gemini CLI sends no session id: each run is the fingerprint of its pool, system prompt and first
    user content (its `<session_context>` block and the prompt), which it resends unchanged on every turn,
    so both turns of a run share one `fp-` id and another run is another session. A user who wants a name
    sets `GEMINI_CLI_CUSTOM_HEADERS="x-session-id: …"`."""
    with GatewayServer(gateway_config(ft, "gem")) as gw:
        runs = [run_gemini(gemini, gw.url), run_gemini(gemini, gw.url, prompt=PROMPT.replace("hello", "hi"))]
        named = run_gemini(gemini, gw.url, GEMINI_CLI_CUSTOM_HEADERS="x-session-id: my-gemini-run")
        found = sessions(gw)
    for run in [*runs, named]:
        assert run.returncode == 0, run.explain()
    turns = {
        sid: [c for c in page["calls"] if c["dialect"] == "gemini" and c["stream"]]
        for sid, page in found.items()
    }
    fingerprinted = {sid: calls for sid, calls in turns.items() if sid.startswith("fp-") and calls}
    assert len(fingerprinted) == 2, {sid: len(c) for sid, c in turns.items()}
    assert all(len(calls) == 2 for calls in fingerprinted.values()), fingerprinted  # the task's two turns
    assert len(turns["my-gemini-run"]) == 2
