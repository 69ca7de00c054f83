"""The scripted agent (SPEC §10): a file-writing tool call with the best tool offered, then "Done" once the
tool result is back — in each dialect and tool type, streamed and not, through the official SDKs.

Shell commands the agent emits are run for real in a temp dir, and patches are applied with a small
reader of Codex's patch format, so a wrong quoting or patch shape fails here, not in the CLI tests.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anthropic
import pytest
from openai import OpenAI

from modelpool.sim import AgentTask, FleetThread, expected_text
from modelpool.sim.agent import codex_patch

CONTENT = "hello from modelpool\n"
DONE = "Done: wrote hello.txt"


def schema(**props: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {k: {"type": v} for k, v in props.items()},
        "required": list(props),
    }


def chat_fn(name: str, **props: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": schema(**props)}}


def resp_fn(name: str, **props: str) -> dict[str, Any]:
    return {"type": "function", "name": name, "parameters": schema(**props)}


CLAUDE_WRITE = {
    "name": "Write",
    "description": "Write a file",
    "input_schema": schema(file_path="string", content="string"),
}
CLAUDE_BASH = {"name": "Bash", "description": "Run a command", "input_schema": schema(command="string")}
CODEX_PATCH = {
    "type": "custom",
    "name": "apply_patch",
    "format": {"type": "grammar", "syntax": "lark", "definition": "start: begin_patch hunk+ end_patch"},
}
CODEX_SHELL = {
    "type": "function",
    "name": "shell",
    "parameters": {
        "type": "object",
        "properties": {
            "command": {"type": "array", "items": {"type": "string"}},
            "workdir": {"type": "string"},
        },
        "required": ["command"],
    },
}


def apply_codex_patch(patch: str, cwd: Path) -> None:
    """Just enough of Codex's apply_patch to check the agent's patch: one `*** Add File` hunk."""
    lines = patch.split("\n")
    assert lines[0] == "*** Begin Patch" and lines[-1] == "*** End Patch", patch
    assert lines[1].startswith("*** Add File: ")
    body = lines[2:-1]
    assert all(line.startswith("+") for line in body), patch
    (cwd / lines[1].removeprefix("*** Add File: ")).write_text("".join(line[1:] + "\n" for line in body))


def run_shell(command: list[str] | str, cwd: Path) -> None:
    argv = command if isinstance(command, list) else ["bash", "-lc", command]
    subprocess.run(argv, cwd=cwd, check=True, timeout=10)


def written(cwd: Path) -> str:
    return (cwd / "hello.txt").read_text()


# ---- Chat Completions ------------------------------------------------------------------------------


def chat(fleet: FleetThread, provider: str = "omni") -> OpenAI:
    return OpenAI(base_url=fleet.base_url(provider), api_key="x", max_retries=0, timeout=10)


def chat_call(fleet: FleetThread, tools: list[dict[str, Any]], stream: bool, **kw: Any) -> Any:
    messages = kw.pop("messages", [{"role": "user", "content": "write hello.txt"}])
    c = chat(fleet)
    if not stream:
        reply = c.chat.completions.create(model="agent", messages=messages, tools=tools, **kw)
        return reply.choices[0]
    with c.chat.completions.stream(model="agent", messages=messages, tools=tools, **kw) as s:
        return s.get_final_completion().choices[0]


@pytest.mark.parametrize("stream", [False, True])
def test_chat_write_tool_with_cwd_hint(fleet: FleetThread, stream: bool) -> None:
    system = {
        "role": "system",
        "content": "You are Claude Code.\n<env>\nWorking directory: /tmp/proj\n</env>",
    }
    messages = [system, {"role": "user", "content": "write hello.txt"}]
    write = chat_fn("Write", file_path="string", content="string")
    choice = chat_call(fleet, [chat_fn("Read", file_path="string"), write], stream, messages=messages)
    assert choice.finish_reason == "tool_calls"
    call = choice.message.tool_calls[0]
    assert call.function.name == "Write"
    assert json.loads(call.function.arguments) == {"file_path": "/tmp/proj/hello.txt", "content": CONTENT}


def test_chat_write_file_tool_relative(fleet: FleetThread) -> None:
    choice = chat_call(fleet, [chat_fn("write_file", path="string", content="string")], False)
    assert json.loads(choice.message.tool_calls[0].function.arguments) == {
        "path": "hello.txt",
        "content": CONTENT,
    }


@pytest.mark.parametrize("stream", [False, True])
def test_chat_apply_patch_function(fleet: FleetThread, stream: bool, tmp_path: Path) -> None:
    choice = chat_call(fleet, [chat_fn("apply_patch", input="string")], stream)
    call = choice.message.tool_calls[0]
    patch = json.loads(call.function.arguments)["input"]
    assert patch == codex_patch(AgentTask())
    apply_codex_patch(patch, tmp_path)
    assert written(tmp_path) == CONTENT


@pytest.mark.parametrize(("props", "key"), [({"command": "array"}, "command"), ({"cmd": "string"}, "cmd")])
def test_chat_shell_functions_run_for_real(
    fleet: FleetThread, tmp_path: Path, props: dict[str, str], key: str
) -> None:
    name = "shell" if key == "command" else "exec_command"
    choice = chat_call(fleet, [chat_fn(name, **props)], False)
    args = json.loads(choice.message.tool_calls[0].function.arguments)
    run_shell(args[key], tmp_path)
    assert written(tmp_path) == CONTENT


def test_chat_custom_apply_patch(fleet: FleetThread) -> None:
    tool = {"type": "custom", "custom": {"name": "apply_patch", "description": "edit"}}
    raw = chat(fleet).chat.completions.with_raw_response.create(
        model="agent",
        messages=[{"role": "user", "content": "write"}],
        tools=[tool],  # type: ignore[list-item]
    )
    call = json.loads(raw.text)["choices"][0]["message"]["tool_calls"][0]
    assert call["type"] == "custom" and call["custom"] == {
        "name": "apply_patch",
        "input": codex_patch(AgentTask()),
    }


@pytest.mark.parametrize("stream", [False, True])
def test_chat_done_after_tool_message(fleet: FleetThread, stream: bool) -> None:
    tools = [chat_fn("write_file", path="string", content="string")]
    first = chat_call(fleet, tools, False).message.tool_calls[0]
    messages = [
        {"role": "user", "content": "write hello.txt"},
        {"role": "assistant", "content": None, "tool_calls": [first.model_dump(exclude_none=True)]},
        {"role": "tool", "tool_call_id": first.id, "content": "ok"},
    ]
    choice = chat_call(fleet, tools, stream, messages=messages)
    assert choice.finish_reason == "stop" and choice.message.content == DONE


def test_no_writing_tool_gives_plain_text(fleet: FleetThread) -> None:
    choice = chat_call(fleet, [chat_fn("lookup", q="string")], False)
    assert choice.finish_reason == "stop" and choice.message.content == expected_text("omni", "agent", 4)
    bare = chat(fleet).chat.completions.create(
        model="agent", messages=[{"role": "user", "content": "title?"}]
    )
    assert bare.choices[0].message.content == expected_text("omni", "agent", 4)


# ---- Anthropic Messages -----------------------------------------------------------------------------


def messages_client(fleet: FleetThread) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=fleet.root_url("omni"), api_key="x", max_retries=0, timeout=10)


def messages_call(fleet: FleetThread, stream: bool, **kw: Any) -> Any:
    kw.setdefault("messages", [{"role": "user", "content": "write hello.txt"}])
    kw.setdefault("max_tokens", 1000)
    kw.setdefault("model", "agent")
    c = messages_client(fleet)
    if not stream:
        return c.messages.create(**kw)
    with c.messages.stream(**kw) as s:
        return s.get_final_message()


CLAUDE_SYSTEM = [
    {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
    {
        "type": "text",
        "text": "<env>\nWorking directory: /tmp/claude-run\nIs directory a git repo: No\n</env>",
    },
]


@pytest.mark.parametrize("stream", [False, True])
def test_messages_write_then_done(fleet: FleetThread, stream: bool) -> None:
    tools = [CLAUDE_BASH, CLAUDE_WRITE]
    msg = messages_call(fleet, stream, system=CLAUDE_SYSTEM, tools=tools)
    assert msg.stop_reason == "tool_use"
    use = msg.content[-1]
    assert use.type == "tool_use" and use.name == "Write"
    assert use.input == {"file_path": "/tmp/claude-run/hello.txt", "content": CONTENT}
    history = [
        {"role": "user", "content": "write hello.txt"},
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in msg.content]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": use.id, "content": "File created"},
                {"type": "text", "text": "<system-reminder>ok</system-reminder>"},
            ],
        },
    ]
    done = messages_call(fleet, stream, system=CLAUDE_SYSTEM, tools=tools, messages=history)
    assert done.stop_reason == "end_turn" and [b.type for b in done.content] == ["text"]
    assert done.content[0].text == DONE


def test_messages_thinking_then_tool_use(fleet: FleetThread) -> None:
    msg = messages_call(fleet, True, model="agent-thinker", tools=[CLAUDE_WRITE])
    assert [b.type for b in msg.content] == ["thinking", "tool_use"] and msg.content[0].signature
    assert msg.content[1].input["file_path"] == "hello.txt"  # no cwd hint: relative


def test_messages_bash_only_runs_for_real(fleet: FleetThread, tmp_path: Path) -> None:
    msg = messages_call(fleet, False, tools=[CLAUDE_BASH])
    run_shell(msg.content[0].input["command"], tmp_path)
    assert written(tmp_path) == CONTENT


# ---- Responses ------------------------------------------------------------------------------------------


def responses_call(fleet: FleetThread, stream: bool, provider: str = "omni", **kw: Any) -> Any:
    kw.setdefault("model", "agent")
    kw.setdefault("input", [{"role": "user", "content": [{"type": "input_text", "text": "write hello.txt"}]}])
    c = chat(fleet, provider)
    if not stream:
        return c.responses.create(**kw)
    with c.responses.stream(**kw) as s:
        return s.get_final_response()


@pytest.mark.parametrize("stream", [False, True])
def test_responses_custom_apply_patch_then_done(fleet: FleetThread, stream: bool, tmp_path: Path) -> None:
    tools = [CODEX_SHELL, CODEX_PATCH]
    resp = responses_call(fleet, stream, tools=tools, store=False, include=["reasoning.encrypted_content"])
    call = resp.output[-1]
    assert call.type == "custom_tool_call" and call.name == "apply_patch"
    apply_codex_patch(call.input, tmp_path)
    assert written(tmp_path) == CONTENT
    history = [
        {"role": "user", "content": [{"type": "input_text", "text": "write hello.txt"}]},
        {"type": "custom_tool_call", "call_id": call.call_id, "name": "apply_patch", "input": call.input},
        {"type": "custom_tool_call_output", "call_id": call.call_id, "output": "Success."},
    ]
    done = responses_call(fleet, stream, tools=tools, input=history, store=False)
    assert done.output_text == DONE and done.output[-1].type == "message"


@pytest.mark.parametrize("stream", [False, True])
def test_responses_local_shell_then_done(fleet: FleetThread, stream: bool, tmp_path: Path) -> None:
    resp = responses_call(fleet, stream, tools=[{"type": "local_shell"}])
    call = resp.output[-1]
    assert call.type == "local_shell_call" and call.action.type == "exec"
    run_shell(call.action.command, tmp_path)
    assert written(tmp_path) == CONTENT
    for output_item in (
        {"type": "local_shell_call_output", "id": call.call_id, "output": "ok"},
        {"type": "function_call_output", "call_id": call.call_id, "output": "ok"},  # what Codex sends back
    ):
        history = [{"role": "user", "content": "write"}, call.model_dump(exclude_none=True), output_item]
        done = responses_call(fleet, stream, tools=[{"type": "local_shell"}], input=history)
        assert done.output_text == DONE


@pytest.mark.parametrize("stream", [False, True])
def test_responses_shell_function(fleet: FleetThread, stream: bool, tmp_path: Path) -> None:
    resp = responses_call(fleet, stream, tools=[CODEX_SHELL])
    call = resp.output[-1]
    assert call.type == "function_call" and call.name == "shell"
    run_shell(json.loads(call.arguments)["command"], tmp_path)
    assert written(tmp_path) == CONTENT


def test_responses_apply_patch_function_and_aggregator(fleet: FleetThread, tmp_path: Path) -> None:
    resp = responses_call(fleet, True, provider="vercel", tools=[resp_fn("apply_patch", input="string")])
    call = resp.output[-1]
    assert call.type == "function_call" and call.name == "apply_patch"
    apply_codex_patch(json.loads(call.arguments)["input"], tmp_path)
    assert written(tmp_path) == CONTENT
    assert fleet.calls("vercel")[-1].dialect == "responses"


def test_custom_task() -> None:
    task = AgentTask(path="notes/a.md", content="one\ntwo\n", done="finished")
    assert codex_patch(task) == "*** Begin Patch\n*** Add File: notes/a.md\n+one\n+two\n*** End Patch"
    assert task.done_text == "finished" and AgentTask().done_text == DONE


def test_local_shell_carried_as_a_function(fleet: FleetThread, tmp_path: Path) -> None:
    """A gateway translating Codex's local_shell into a Chat function: the agent still writes the file."""
    tool = {
        "type": "function",
        "function": {
            "name": "local_shell",
            "parameters": {"type": "object", "properties": {"command": {"type": "array", "items": {}}}},
        },
    }
    choice = chat_call(fleet, [tool], False)
    run_shell(json.loads(choice.message.tool_calls[0].function.arguments)["command"], tmp_path)
    assert written(tmp_path) == CONTENT
