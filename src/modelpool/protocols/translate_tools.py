"""Responses tools that chat and Anthropic routes cannot name, carried as function tools (SPEC §1.6).

Codex offers its file editor as a `custom` tool (free text, optionally constrained by a Lark or regex
grammar) and its shell as `local_shell`. Neither exists in Chat Completions or Messages, so on a
translated attempt:

- a `custom` tool becomes a function tool with one string parameter `input`; the description carries
  the tool's grammar so the model knows the syntax it must write;
- `local_shell` becomes a function tool `local_shell` with `{command: [str], workdir, timeout_ms, env}`;
- history items (`custom_tool_call`, `local_shell_call` and their outputs) become tool calls/results;
- the route's function calls of those names come back as `custom_tool_call` {call_id, name, input} and
  `local_shell_call` {call_id, action: {type: exec, …}} items (`special_tools` tells the encoders which).

Pure functions on decoded JSON; only the reply direction runs per call (once per tool call, not per chunk).
"""

from __future__ import annotations

from typing import Any

import orjson

from modelpool.protocols.mapping import parse_arguments
from modelpool.protocols.translate_deferred import TOOL_SEARCH, client_search, namespaced, search_call_item

LOCAL_SHELL = "local_shell"  # the function name the local_shell tool gets upstream

_LOCAL_SHELL_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {
            "type": "array",
            "items": {"type": "string"},
            "description": 'The command and its arguments, e.g. ["bash", "-lc", "ls -la"].',
        },
        "workdir": {"type": "string", "description": "Working directory to run the command in."},
        "timeout_ms": {"type": "integer", "description": "Timeout for the command in milliseconds."},
        "env": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": "Environment variables to set for the command.",
        },
    },
    "required": ["command"],
}
_LOCAL_SHELL_DESCRIPTION = "Runs a shell command on the user's machine and returns its output."


def custom_description(tool: dict[str, Any]) -> str:
    """The function description of a custom tool: its own text, then how to write `input`."""
    head = tool.get("description") if isinstance(tool.get("description"), str) else ""
    fmt = tool.get("format")
    if isinstance(fmt, dict) and fmt.get("type") == "grammar":
        note = (
            f"Put the whole tool input in the string parameter `input`, as raw text that matches this "
            f"{fmt.get('syntax') or 'lark'} grammar exactly (no JSON, no code fences):\n"
            f"{fmt.get('definition') or ''}"
        )
    else:
        note = "Put the whole tool input in the string parameter `input`, as free-form text."
    return f"{head}\n\n{note}" if head else note


def function_for(tool: dict[str, Any]) -> dict[str, Any] | None:
    """A Responses `custom` / `local_shell` tool as a chat function definition, else None."""
    kind = tool.get("type")
    if kind == "custom" and isinstance(tool.get("name"), str):
        params = {
            "type": "object",
            "properties": {"input": {"type": "string", "description": "The raw tool input."}},
            "required": ["input"],
            "additionalProperties": False,
        }
        return {"name": tool["name"], "description": custom_description(tool), "parameters": params}
    if kind == LOCAL_SHELL:
        return {
            "name": LOCAL_SHELL,
            "description": _LOCAL_SHELL_DESCRIPTION,
            "parameters": _LOCAL_SHELL_PARAMETERS,
        }
    return None


def special_tools(request: dict[str, Any] | None) -> dict[str, str]:
    """Function name → "custom" | "local_shell" | "tool_search" | "namespace" for the Responses request's
    carried tools whose calls come back as other items or fields ({} if none)."""
    out: dict[str, str] = {}
    for tool in (request or {}).get("tools") or ():
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "custom" and isinstance(tool.get("name"), str):
            out[tool["name"]] = "custom"
        elif tool.get("type") == LOCAL_SHELL:
            out[LOCAL_SHELL] = LOCAL_SHELL
        elif client_search(tool):
            out[TOOL_SEARCH] = TOOL_SEARCH
    for flat in namespaced(request):
        out.setdefault(flat, "namespace")
    return out


# ---------------------------------------------------------------- history items → chat


def custom_call_arguments(item: dict[str, Any]) -> str:
    value = item.get("input")
    return orjson.dumps({"input": value if isinstance(value, str) else ""}).decode()


def local_shell_arguments(item: dict[str, Any]) -> str:
    action: dict[str, Any] = item["action"] if isinstance(item.get("action"), dict) else {}
    args: dict[str, Any] = {"command": action.get("command") or []}
    if action.get("working_directory"):
        args["workdir"] = action["working_directory"]
    if action.get("timeout_ms") is not None:
        args["timeout_ms"] = action["timeout_ms"]
    if action.get("env"):
        args["env"] = action["env"]
    if action.get("user"):
        args["user"] = action["user"]
    return orjson.dumps(args).decode()


# ---------------------------------------------------------------- route's calls → client items


def custom_input(arguments: str) -> str:
    """The `input` string of a custom tool call from the function arguments the route wrote. A model that
    wrote something else than `{"input": "…"}` gets its raw arguments passed on rather than lost."""
    args = parse_arguments(arguments)
    value = args.get("input")
    if isinstance(value, str):
        return value
    return arguments


def local_shell_action(arguments: str) -> dict[str, Any]:
    args = parse_arguments(arguments)
    command = args.get("command")
    if isinstance(command, str):  # a model that wrote one string: run it through the shell
        command = ["bash", "-lc", command]
    action: dict[str, Any] = {
        "type": "exec",
        "command": [str(c) for c in command] if isinstance(command, list) else [],
        "env": args.get("env") if isinstance(args.get("env"), dict) else {},
    }
    workdir = args.get("workdir") or args.get("working_directory")
    if isinstance(workdir, str):
        action["working_directory"] = workdir
    if isinstance(args.get("timeout_ms"), int):
        action["timeout_ms"] = args["timeout_ms"]
    if isinstance(args.get("user"), str):
        action["user"] = args["user"]
    return action


def client_item(
    kind: str, item_id: str, call_id: str, name: str, arguments: str, request: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A completed `custom_tool_call` / `local_shell_call` / `tool_search_call` item, or a namespaced
    `function_call` (`request`: the client's, for the namespace), for a route's function call."""
    if kind == TOOL_SEARCH:
        return search_call_item(item_id, call_id, arguments)
    if kind == "namespace":
        namespace, child = namespaced(request).get(name, ("", name))
        return {
            "id": item_id,
            "type": "function_call",
            "call_id": call_id,
            "name": child,
            "namespace": namespace,
            "arguments": arguments,
            "status": "completed",
        }
    if kind == "custom":
        return {
            "id": item_id,
            "type": "custom_tool_call",
            "call_id": call_id,
            "name": name,
            "input": custom_input(arguments),
            "status": "completed",
        }
    return {
        "id": item_id,
        "type": "local_shell_call",
        "call_id": call_id,
        "action": local_shell_action(arguments),
        "status": "completed",
    }
