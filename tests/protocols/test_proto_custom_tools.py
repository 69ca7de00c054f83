"""Responses `custom` and `local_shell` tools on routes that must translate (SPEC §1.6): offered to the route
as function tools, their calls handed back to the client as `custom_tool_call` / `local_shell_call` items
(stream and body, from chat and Anthropic routes), and their history items carried into chat / Anthropic
tool calls and results. The client side is checked with the official `openai` SDK's types and stream
accumulator."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from openai.types.responses import Response, ResponseCustomToolCall
from proto_helpers import sdk_responses_final, translate

from modelpool.protocols.sse import SSEParser
from modelpool.protocols.translate_body import translate_body
from modelpool.protocols.translate_responses import responses_to_anthropic, responses_to_openai

GRAMMAR = (
    'start: begin_patch hunk+ end_patch\nbegin_patch: "*** Begin Patch" LF\nend_patch: "*** End Patch" LF?'
)
APPLY_PATCH = {
    "type": "custom",
    "name": "apply_patch",
    "description": "Use the `apply_patch` tool to edit files.",
    "format": {"type": "grammar", "syntax": "lark", "definition": GRAMMAR},
}
SHELL = {"type": "local_shell"}
PATCH = '*** Begin Patch\n*** Add File: hello.txt\n+hello "world"\n*** End Patch\n'
REQUEST: dict[str, Any] = {
    "model": "pool",
    "input": "write hello.txt",
    "tools": [APPLY_PATCH, SHELL],
    "stream": True,
}


def test_custom_and_local_shell_tools_become_function_tools() -> None:
    out = responses_to_openai(REQUEST)
    fns = {t["function"]["name"]: t["function"] for t in out["tools"]}
    assert set(fns) == {"apply_patch", "local_shell"}
    patch = fns["apply_patch"]
    assert patch["parameters"]["required"] == ["input"]
    assert patch["parameters"]["properties"]["input"]["type"] == "string"
    # The model must see the grammar to write the input in its syntax.
    assert GRAMMAR in patch["description"] and "lark" in patch["description"]
    assert patch["description"].startswith("Use the `apply_patch` tool")
    shell = fns["local_shell"]["parameters"]
    assert shell["properties"]["command"] == {
        "type": "array",
        "items": {"type": "string"},
        "description": shell["properties"]["command"]["description"],
    }
    assert {"workdir", "timeout_ms", "env"} <= set(shell["properties"])
    anth = responses_to_anthropic(REQUEST)
    assert [t["name"] for t in anth["tools"]] == ["apply_patch", "local_shell"]
    assert anth["tools"][0]["input_schema"]["required"] == ["input"]


def test_tool_choice_names_a_custom_or_shell_tool() -> None:
    chosen = responses_to_openai({**REQUEST, "tool_choice": {"type": "custom", "name": "apply_patch"}})
    assert chosen["tool_choice"] == {"type": "function", "function": {"name": "apply_patch"}}
    shell = responses_to_openai({**REQUEST, "tool_choice": {"type": "local_shell"}})
    assert shell["tool_choice"] == {"type": "function", "function": {"name": "local_shell"}}


HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": [{"type": "input_text", "text": "write hello.txt"}]},
    {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_p", "name": "apply_patch", "input": PATCH},
    {"type": "custom_tool_call_output", "call_id": "call_p", "output": "Done!"},
    {
        "type": "local_shell_call",
        "id": "lsh_1",
        "call_id": "call_s",
        "status": "completed",
        "action": {
            "type": "exec",
            "command": ["cat", "hello.txt"],
            "env": {"A": "1"},
            "working_directory": "/w",
        },
    },
    {"type": "local_shell_call_output", "id": "lsh_1", "output": '{"output": "hello"}'},
]


def test_history_items_become_tool_calls_and_results() -> None:
    out = responses_to_openai({**REQUEST, "input": HISTORY})
    msgs = out["messages"]
    assert msgs[1]["tool_calls"][0]["id"] == "call_p"
    assert msgs[1]["tool_calls"][0]["function"]["name"] == "apply_patch"
    assert orjson.loads(msgs[1]["tool_calls"][0]["function"]["arguments"]) == {"input": PATCH}
    assert msgs[2] == {"role": "tool", "tool_call_id": "call_p", "content": "Done!"}
    shell_call = msgs[3]["tool_calls"][0]
    assert shell_call["id"] == "call_s" and shell_call["function"]["name"] == "local_shell"
    args = orjson.loads(shell_call["function"]["arguments"])
    assert args == {"command": ["cat", "hello.txt"], "workdir": "/w", "env": {"A": "1"}}
    # The output names the call by its item id: it still answers call_s.
    assert msgs[4] == {"role": "tool", "tool_call_id": "call_s", "content": '{"output": "hello"}'}
    anth = responses_to_anthropic({**REQUEST, "input": HISTORY})
    turns = anth["messages"]
    assert turns[1]["content"][0] == {
        "type": "tool_use",
        "id": "call_p",
        "name": "apply_patch",
        "input": {"input": PATCH},
    }
    assert turns[2]["content"][0]["tool_use_id"] == "call_p"
    assert turns[3]["content"][0]["input"]["command"] == ["cat", "hello.txt"]
    assert turns[4]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "call_s",
        "content": '{"output": "hello"}',
    }


# ---------------------------------------------------------------- replies


def _sse(events: list[dict[str, Any]], done: bool = True) -> bytes:
    out = b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events)
    return out + (b"data: [DONE]\n\n" if done else b"")


def _chat_stream(name: str, arguments: str, call_id: str = "call_1") -> bytes:
    """A chat route calling `name`, its JSON arguments streamed in small escaped fragments."""
    head = {"id": "c", "object": "chat.completion.chunk", "model": "m", "created": 1}
    chunks: list[dict[str, Any]] = [{**head, "choices": [{"index": 0, "delta": {"role": "assistant"}}]}]
    first = {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
    chunks.append({**head, "choices": [{"index": 0, "delta": {"tool_calls": [first]}}]})
    for i in range(0, len(arguments), 7):
        frag = {"index": 0, "function": {"arguments": arguments[i : i + 7]}}
        chunks.append({**head, "choices": [{"index": 0, "delta": {"tool_calls": [frag]}}]})
    chunks.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    return _sse(chunks)


def _anthropic_stream(name: str, arguments: str) -> bytes:
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "m",
                "type": "message",
                "role": "assistant",
                "model": "m",
                "content": [],
                "usage": {"input_tokens": 5, "output_tokens": 0},
            },
        },
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": name, "input": {}},
        },
    ]
    for i in range(0, len(arguments), 9):
        delta = {"type": "input_json_delta", "partial_json": arguments[i : i + 9]}
        events.append({"type": "content_block_delta", "index": 0, "delta": delta})
    events += [
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    ]
    return b"".join(b"event: " + e["type"].encode() + b"\ndata: " + orjson.dumps(e) + b"\n\n" for e in events)


STREAMS = {"openai": _chat_stream, "anthropic": _anthropic_stream}


@pytest.mark.parametrize("upstream", ["openai", "anthropic"])
def test_stream_custom_tool_call_reaches_the_client_as_its_item(upstream: str) -> None:
    arguments = orjson.dumps({"input": PATCH}).decode()
    out, _ = translate(STREAMS[upstream]("apply_patch", arguments), upstream, "responses", request=REQUEST)
    events = [orjson.loads(ev.data) for ev in SSEParser().feed(out)]
    kinds = [e["type"] for e in events]
    assert "response.function_call_arguments.delta" not in kinds
    i = kinds.index("response.custom_tool_call_input.delta")
    assert kinds[i + 1 : i + 3] == ["response.custom_tool_call_input.done", "response.output_item.done"]
    added = events[kinds.index("response.output_item.added")]["item"]
    assert added["type"] == "custom_tool_call" and added["input"] == "" and added["name"] == "apply_patch"
    assert (
        "".join(e["delta"] for e in events if e["type"] == "response.custom_tool_call_input.delta") == PATCH
    )
    assert events[i + 1]["input"] == PATCH
    final = sdk_responses_final(out)
    (item,) = final.output
    assert isinstance(item, ResponseCustomToolCall)
    assert item.input == PATCH and item.name == "apply_patch"
    assert item.call_id == ("call_1" if upstream == "openai" else "toolu_1")


@pytest.mark.parametrize("upstream", ["openai", "anthropic"])
def test_stream_local_shell_call_reaches_the_client_as_its_item(upstream: str) -> None:
    arguments = orjson.dumps({"command": ["ls", "-la"], "workdir": "/tmp", "timeout_ms": 5000}).decode()
    out, _ = translate(STREAMS[upstream]("local_shell", arguments), upstream, "responses", request=REQUEST)
    final = sdk_responses_final(out)
    (item,) = final.output
    assert item.type == "local_shell_call" and item.status == "completed"
    assert item.action.command == ["ls", "-la"] and item.action.working_directory == "/tmp"
    assert item.action.timeout_ms == 5000 and item.action.type == "exec" and item.action.env == {}


def test_a_function_of_the_same_name_without_the_custom_tool_stays_a_function_call() -> None:
    arguments = orjson.dumps({"input": "x"}).decode()
    request = {**REQUEST, "tools": [{"type": "function", "name": "apply_patch", "parameters": {}}]}
    out, _ = translate(_chat_stream("apply_patch", arguments), "openai", "responses", request=request)
    (item,) = sdk_responses_final(out).output
    assert item.type == "function_call" and item.arguments == arguments


def test_a_model_that_ignores_the_input_parameter_still_gets_its_text_through() -> None:
    out, _ = translate(_chat_stream("apply_patch", "*** Begin Patch"), "openai", "responses", request=REQUEST)
    (item,) = sdk_responses_final(out).output
    assert item.type == "custom_tool_call" and item.input == "*** Begin Patch"


CHAT_BODY = {
    "id": "c",
    "object": "chat.completion",
    "model": "m",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_p",
                        "type": "function",
                        "function": {
                            "name": "apply_patch",
                            "arguments": orjson.dumps({"input": PATCH}).decode(),
                        },
                    },
                    {
                        "id": "call_s",
                        "type": "function",
                        "function": {"name": "local_shell", "arguments": '{"command": ["pwd"]}'},
                    },
                ],
            },
        }
    ],
    "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
}
ANTHROPIC_BODY = {
    "id": "m",
    "type": "message",
    "role": "assistant",
    "model": "m",
    "content": [
        {"type": "tool_use", "id": "call_p", "name": "apply_patch", "input": {"input": PATCH}},
        {"type": "tool_use", "id": "call_s", "name": "local_shell", "input": {"command": ["pwd"]}},
    ],
    "stop_reason": "tool_use",
    "usage": {"input_tokens": 5, "output_tokens": 7},
}


@pytest.mark.parametrize(("upstream", "body"), [("openai", CHAT_BODY), ("anthropic", ANTHROPIC_BODY)])
def test_body_calls_become_custom_and_local_shell_items(upstream: str, body: dict[str, Any]) -> None:
    out = translate_body(body, upstream, "responses", model="pool", request=REQUEST)
    resp = Response.model_validate(out)
    patch, shell = resp.output
    assert isinstance(patch, ResponseCustomToolCall) and patch.input == PATCH and patch.call_id == "call_p"
    assert shell.type == "local_shell_call" and shell.call_id == "call_s"
    assert shell.action.command == ["pwd"] and shell.action.type == "exec"
    # Sent back as history, the items become the same calls again.
    again = responses_to_openai(
        {
            **REQUEST,
            "input": [
                *out["output"],
                {"type": "custom_tool_call_output", "call_id": "call_p", "output": "ok"},
            ],
        }
    )
    calls = again["messages"][0]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["apply_patch", "local_shell"]
    assert orjson.loads(calls[0]["function"]["arguments"]) == {"input": PATCH}
    assert orjson.loads(calls[1]["function"]["arguments"])["command"] == ["pwd"]
