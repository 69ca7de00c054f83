"""Codex-style `custom` and `local_shell` tools over HTTP through the real server, with the `openai` SDK's
Responses API, on a chat route and an Anthropic route of the simulated fleet (which answer a fresh user turn
with a call of the first tool offered): the upstream is offered function tools (the grammar in the custom
tool's description), and the client gets its own item types back, streamed and not."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider, expected_tool_arguments

GRAMMAR = 'start: begin_patch hunk+ end_patch\nbegin_patch: "*** Begin Patch" LF'
APPLY_PATCH = {
    "type": "custom",
    "name": "apply_patch",
    "description": "Edit files with a patch.",
    "format": {"type": "grammar", "syntax": "lark", "definition": GRAMMAR},
}


@pytest.fixture(scope="module")
def ft() -> Iterator[FleetThread]:
    fast = {"ttft": 0.005, "tps": 5000.0}
    spec = FleetSpec(
        [
            SimProvider("oa", models=[SimModel("m1", output_tokens=5)], **fast),
            SimProvider("an", kind="anthropic", models=[SimModel("m1", output_tokens=5)], **fast),
        ]
    )
    with FleetThread(spec) as fleet:
        yield fleet


def gateway(ft: FleetThread, route: str) -> GatewayServer:
    cfg = ft.to_config(state={"backend": "memory"}, server={"admin_token": ADMIN_TOKEN})
    cfg["pool"] = {"strategy": "priority", "provider_order": [route], "sticky": False, "max_attempts": 1}
    return GatewayServer(cfg)


@pytest.mark.parametrize("route", ["oa", "an"])
def test_custom_tool_call_round_trip(ft: FleetThread, route: str) -> None:
    with gateway(ft, route) as gw:
        client = openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0)
        tools = [APPLY_PATCH, {"type": "local_shell"}]
        with client.responses.stream(model="m1", input="write hello.txt", tools=tools) as stream:
            kinds = [ev.type for ev in stream]
            final = stream.get_final_response()
        upstream = ft.calls(route)[-1]
        offered = upstream.body["tools"]
        if route == "oa":
            assert [t["function"]["name"] for t in offered] == ["apply_patch", "local_shell"]
            description = offered[0]["function"]["description"]
        else:
            assert upstream.path.endswith("/v1/messages")
            assert [t["name"] for t in offered] == ["apply_patch", "local_shell"]
            description = offered[0]["description"]
        assert GRAMMAR in description
        (item,) = final.output
        assert item.type == "custom_tool_call" and item.name == "apply_patch"
        # The sim's model ignores the `input` parameter: its raw arguments come through as the input.
        assert item.input == expected_tool_arguments(route, "m1")
        assert (
            "response.custom_tool_call_input.delta" in kinds
            and "response.custom_tool_call_input.done" in kinds
        )

        # Codex sends the call and its output back: the route sees a tool call and its result.
        history = [
            {"role": "user", "content": "write hello.txt"},
            {"type": "custom_tool_call", "call_id": item.call_id, "name": "apply_patch", "input": item.input},
            {"type": "custom_tool_call_output", "call_id": item.call_id, "output": "Done"},
        ]
        reply = client.responses.create(model="m1", input=history, tools=tools)
        assert reply.output_text  # the route answered the tool result with text
        sent = ft.calls(route)[-1].body["messages"]
        if route == "oa":
            assert sent[1]["tool_calls"][0]["id"] == item.call_id
            assert sent[2] == {"role": "tool", "tool_call_id": item.call_id, "content": "Done"}
        else:
            assert sent[1]["content"][0]["type"] == "tool_use" and sent[1]["content"][0]["id"] == item.call_id
            assert sent[2]["content"][0]["tool_use_id"] == item.call_id


@pytest.mark.parametrize("route", ["oa", "an"])
def test_local_shell_call_comes_back_as_its_item(ft: FleetThread, route: str) -> None:
    with gateway(ft, route) as gw:
        client = openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0)
        reply = client.responses.create(model="m1", input="list files", tools=[{"type": "local_shell"}])
        (item,) = reply.output
        assert item.type == "local_shell_call" and item.status == "completed"
        assert item.action.type == "exec" and item.call_id
