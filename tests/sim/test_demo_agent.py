"""The demo as a place to try agents (SPEC §10, issue #26): the demo fleet behind the demo's own gateway
config answers a coding agent like the scripted task — a call of the write tool the request offers, with
the file the prompt names (and the line it asks for), then a short answer once the tool result is back — in
each dialect, natively on the demo route that speaks it: Chat tool calls (workbuddy), Anthropic `tool_use`
(deepseek), Responses function / custom `apply_patch` / `local_shell` (the vercel aggregator). A prompt that
names no file gets an ordinary reply. Official SDKs, the real gateway."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest
from openai import OpenAI

from gateway_server import GatewayServer
from modelpool.cli.demo import DEMO_POOL, demo_config
from modelpool.sim import FleetThread, demo_fleet
from modelpool.sim.presets import DEMO_MODEL

PROMPT = "create notes/todo.md containing the line: ship the demo"
WANT = ("notes/todo.md", "ship the demo\n")
DONE = "Done: wrote notes/todo.md"
CHAT_ROUTE, MESSAGES_ROUTE = "workbuddy/deepseek-v4.1-flash", "deepseek/deepseek-flash"
RESPONSES_ROUTE = f"vercel/{DEMO_MODEL}"


@pytest.fixture(scope="module")
def demo() -> Iterator[GatewayServer]:
    with FleetThread(demo_fleet()) as ft, GatewayServer(demo_config(ft.fleet, "demo-token", 0)) as gw:
        yield gw


def schema(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(props)}


def test_chat_write_file_call_with_the_prompts_file_then_done(demo: GatewayServer) -> None:
    client = OpenAI(base_url=demo.url + "/v1", api_key="any", max_retries=2)
    tools: Any = [{"type": "function", "function": {"name": "write_file", "parameters": schema(
        path={"type": "string"}, content={"type": "string"})}}]  # fmt: skip
    msgs: list[Any] = [{"role": "user", "content": PROMPT}]
    head = {"x-modelpool-route": CHAT_ROUTE}
    first = client.chat.completions.create(model=DEMO_POOL, messages=msgs, tools=tools, extra_headers=head)
    (call,) = first.choices[0].message.tool_calls or []
    assert call.function.name == "write_file"  # type: ignore[union-attr]
    args = json.loads(call.function.arguments)  # type: ignore[union-attr]
    assert (args["path"], args["content"]) == WANT
    msgs += [first.choices[0].message.model_dump(exclude_none=True),
             {"role": "tool", "tool_call_id": call.id, "content": "ok"}]  # fmt: skip
    done = client.chat.completions.create(model=DEMO_POOL, messages=msgs, tools=tools, extra_headers=head)
    assert done.choices[0].message.content == DONE


def test_anthropic_tool_use_with_an_absolute_path_then_done(demo: GatewayServer) -> None:
    client = anthropic.Anthropic(base_url=demo.url, api_key="any", max_retries=2)
    tools: Any = [{"name": "Write", "description": "Write a file", "input_schema": schema(
        file_path={"type": "string"}, content={"type": "string"})}]  # fmt: skip
    system = "You are Claude Code.\nWorking directory: /tmp/work\n"
    msgs: list[Any] = [{"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>CLAUDE.md says hi</system-reminder>"},
        {"type": "text", "text": PROMPT}]}]  # fmt: skip
    head = {"x-modelpool-route": MESSAGES_ROUTE}
    with client.messages.stream(
        model=DEMO_POOL, max_tokens=512, system=system, messages=msgs, tools=tools, extra_headers=head
    ) as stream:
        first = stream.get_final_message()
    (use,) = [b for b in first.content if b.type == "tool_use"]
    assert use.name == "Write" and use.input == {"file_path": "/tmp/work/notes/todo.md", "content": WANT[1]}
    result = {"type": "tool_result", "tool_use_id": use.id, "content": "ok"}
    msgs += [{"role": "assistant", "content": [b.model_dump() for b in first.content]},
             {"role": "user", "content": [result]}]  # fmt: skip
    done = client.messages.create(
        model=DEMO_POOL, max_tokens=512, messages=msgs, tools=tools, extra_headers=head
    )
    assert "".join(b.text for b in done.content if b.type == "text") == DONE


def responses(demo: GatewayServer, tools: list[Any], prompt: str = PROMPT) -> Any:
    client = OpenAI(base_url=demo.url + "/v1", api_key="any", max_retries=2)
    return client.responses.create(
        model=DEMO_POOL, input=prompt, tools=tools, extra_headers={"x-modelpool-route": RESPONSES_ROUTE}
    )


def test_responses_custom_apply_patch(demo: GatewayServer) -> None:
    tool = {"type": "custom", "name": "apply_patch", "description": "edit files"}
    (item,) = [i for i in responses(demo, [tool]).output if i.type == "custom_tool_call"]
    lines = item.input.split("\n")
    assert lines[:2] == ["*** Begin Patch", "*** Add File: notes/todo.md"] and lines[2] == "+ship the demo"


def test_responses_exec_command_gets_its_cmd_and_the_command_writes_the_file(
    demo: GatewayServer, tmp_path: Path
) -> None:
    """Codex's `exec_command` takes `cmd` (the demo used to answer with arguments that did not fit: Codex
    said `missing field cmd`)."""
    tool = {"type": "function", "name": "exec_command", "parameters": schema(cmd={"type": "string"})}
    (item,) = [i for i in responses(demo, [tool]).output if i.type == "function_call"]
    args = json.loads(item.arguments)
    assert set(args) == {"cmd"}
    subprocess.run(["bash", "-lc", args["cmd"]], cwd=tmp_path, check=True, timeout=10)
    assert (tmp_path / WANT[0]).read_text() == WANT[1]


def test_responses_local_shell(demo: GatewayServer) -> None:
    (item,) = [i for i in responses(demo, [{"type": "local_shell"}]).output if i.type == "local_shell_call"]
    assert item.action.command[:2] == ["bash", "-lc"] and "notes/todo.md" in item.action.command[2]


def test_a_prompt_naming_no_file_gets_an_ordinary_answer(demo: GatewayServer) -> None:
    tool = {"type": "function", "name": "exec_command", "parameters": schema(cmd={"type": "string"})}
    reply = responses(demo, [tool], prompt="What is a good name for a cat?")
    assert [i.type for i in reply.output if i.type != "reasoning"] == ["message"]  # text, no tool call
    assert reply.output_text
