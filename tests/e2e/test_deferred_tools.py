"""Codex's `tool_search` and `namespace` tools on routes that speak no Responses (issue #26, SPEC §1.6).

Through the real server with the official OpenAI SDK: a Responses client offering Codex's client-run
`tool_search` and namespaced functions on a chat-only and an Anthropic-only route gets the route's calls
back in its own item types (`tool_search_call`, a `function_call` with its `namespace`), and a conversation
that loaded tools by a search sends them up as function tools. The sim's plain model calls the first tool
offered on a fresh user turn and answers in text after a tool result.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider

SEARCH = {
    "type": "tool_search",
    "execution": "client",
    "description": "Searches over deferred tool metadata.",
    "parameters": {
        "type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "number"}},
        "required": ["query"],
        "additionalProperties": False,
    },
}
CALENDAR = {
    "type": "namespace",
    "name": "mcp__calendar",
    "description": "Tools of the calendar MCP server.",
    "tools": [
        {
            "type": "function",
            "name": "create_event",
            "description": "Create a calendar event.",
            "parameters": {"type": "object", "properties": {"title": {"type": "string"}}},
            "defer_loading": True,
        }
    ],
}
FLAT = "mcp__calendar__create_event"
WEB = {"type": "web_search", "external_web_access": False}
USER = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "add a meeting"}]}
ROUTES = {"chat": ("openai", "chat/completions"), "anth": ("anthropic", "messages")}


@pytest.fixture(scope="module")
def ft() -> Iterator[FleetThread]:
    fast: dict[str, Any] = {"ttft": 0.002, "tps": 5000.0}
    spec = FleetSpec(
        [
            SimProvider("chat", kind="openai", dialects=("openai",), models=[SimModel("m1")], **fast),
            SimProvider("anth", kind="anthropic", dialects=("anthropic",), models=[SimModel("m1")], **fast),
        ]
    )
    with FleetThread(spec) as fleet:
        yield fleet


def serve(ft: FleetThread, route: str) -> GatewayServer:
    cfg = ft.to_config(providers=[route], state={"backend": "memory"}, server={"admin_token": ADMIN_TOKEN})
    cfg["providers"][0]["dialects"] = [ROUTES[route][0]]
    cfg["pool"] = {"retry_backoff": "1ms", "sticky": False}
    return GatewayServer(cfg)


def client(gw: GatewayServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0)


def upstream_tools(body: dict[str, Any]) -> list[str]:
    return [t.get("name") or t["function"]["name"] for t in body.get("tools") or []]


def respond(gw: GatewayServer, stream: bool, **kw: Any) -> tuple[list[dict[str, Any]], str | None]:
    """The response's output items (from `response.completed` when streamed) and x-modelpool-dropped,
    checked against the `dropped` of the final `modelpool` metadata (the same names, where a client that
    reads no headers finds them)."""
    if not stream:
        raw = client(gw).responses.with_raw_response.create(model="m1", **kw)
        response = raw.http_response.json()
        dropped = raw.headers.get("x-modelpool-dropped")
    else:
        with client(gw).responses.with_streaming_response.create(model="m1", stream=True, **kw) as raw:
            dropped = raw.headers.get("x-modelpool-dropped")
            events = [e.to_dict() for e in raw.parse()]
        done = [e for e in events if e["type"] in ("output_item.done", "response.output_item.done")]
        response = next(e for e in events if e["type"] == "response.completed")["response"]
        assert [e["item"] for e in done] == response["output"]
    named = response["modelpool"].get("dropped")
    assert named == (dropped.split(", ") if dropped else None), (named, dropped)
    return response["output"], dropped


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("route", ["chat", "anth"])
def test_tool_search_call_comes_back_as_codex_item(ft: FleetThread, route: str, stream: bool) -> None:
    with serve(ft, route) as gw:
        ft.reset_calls()
        output, dropped = respond(gw, stream, input=[USER], tools=[SEARCH, WEB])
    call = ft.calls(route)[-1]
    assert call.path.endswith(ROUTES[route][1])
    assert upstream_tools(call.body or {}) == ["tool_search"]
    assert dropped == "tools[web_search]"  # left out (the default), and named
    items = [i for i in output if i["type"] != "reasoning"]
    assert [i["type"] for i in items] == ["tool_search_call"], output
    assert items[0]["execution"] == "client" and isinstance(items[0]["arguments"], dict)
    assert items[0]["call_id"]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("route", ["chat", "anth"])
def test_namespaced_call_comes_back_with_its_namespace(ft: FleetThread, route: str, stream: bool) -> None:
    with serve(ft, route) as gw:
        ft.reset_calls()
        output, dropped = respond(gw, stream, input=[USER], tools=[CALENDAR])
    assert upstream_tools(ft.calls(route)[-1].body or {}) == [FLAT]
    assert dropped is None  # nothing was left out
    items = [i for i in output if i["type"] != "reasoning"]
    assert len(items) == 1 and items[0]["type"] == "function_call", output
    assert (items[0]["name"], items[0]["namespace"]) == ("create_event", "mcp__calendar")


@pytest.mark.parametrize("route", ["chat", "anth"])
def test_a_search_in_the_history_loads_its_tools(ft: FleetThread, route: str) -> None:
    history = [
        USER,
        {
            "type": "tool_search_call",
            "call_id": "call_s1",
            "status": "completed",
            "execution": "client",
            "arguments": {"query": "calendar", "limit": 8},
        },
        {
            "type": "tool_search_output",
            "call_id": "call_s1",
            "status": "completed",
            "execution": "client",
            "tools": [CALENDAR],
        },
        {
            "type": "function_call",
            "call_id": "call_c1",
            "name": "create_event",
            "namespace": "mcp__calendar",
            "arguments": '{"title": "standup"}',
        },
        {"type": "function_call_output", "call_id": "call_c1", "output": "created"},
    ]
    with serve(ft, route) as gw:
        ft.reset_calls()
        output, dropped = respond(gw, False, input=history, tools=[SEARCH])
    body = ft.calls(route)[-1].body or {}
    assert upstream_tools(body) == ["tool_search", FLAT]
    assert dropped is None
    text = str(body["messages"])
    # The search and the namespaced call go up as calls of the functions the route was given.
    assert "'tool_search'" in text and f"'{FLAT}'" in text and "now available" in text, text
    assert any(i["type"] == "message" for i in output), output  # the answer after the tool result
