"""Codex's deferred tools on a route that cannot name them (SPEC §1.6: what a client only offers).

Codex 0.171 offers `tool_search` with `execution: "client"` — a search Codex runs itself over its deferred
tools (MCP servers, apps) — and receives the tools it found as `namespace` tools (a name, a description and
function tools) in a `tool_search_output` item; `additional_tools` items and `tools[]` may carry namespaces
too. None of that needs OpenAI's servers, so a chat or Anthropic route gets it as plain function tools:

- `tool_search` becomes a function tool of its own `parameters`; the route's call of it comes back to Codex
  as a `tool_search_call` item (`arguments` an object, `execution: "client"`), and the history's
  `tool_search_call` / `tool_search_output` become a tool call and a tool result naming the tools found;
- each function of a namespace becomes a function tool `<namespace>__<name>` (only letters, digits, `_`
  and `-`, at most 64 characters — longer names end in a short hash), whether offered in `tools[]` or
  loaded by a search earlier in the conversation; the route's call of that name comes back as a
  `function_call` with `name` and `namespace`, and the history's namespaced calls go up flattened again.

Pure functions on decoded JSON, run once per translated request (and per tool call of the reply).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from typing import Any

import orjson

TOOL_SEARCH = "tool_search"
_NAME_MAX = 64  # OpenAI and Anthropic both cap tool names at 64 characters
_BAD = re.compile(r"[^A-Za-z0-9_-]")


def client_search(tool: Any) -> bool:
    """A `tool_search` tool the client runs itself (Codex): carried as a function. One OpenAI runs
    (`execution` absent or "server") is a hosted tool."""
    return isinstance(tool, dict) and tool.get("type") == TOOL_SEARCH and tool.get("execution") == "client"


def flat_name(namespace: str, name: str) -> str:
    """The function name a namespaced tool gets upstream; the same for a tool and for a call of it."""
    flat = _BAD.sub("_", f"{namespace}__{name}")
    if len(flat) <= _NAME_MAX:
        return flat
    digest = hashlib.sha1(flat.encode()).hexdigest()[:10]
    return f"{flat[: _NAME_MAX - 11]}_{digest}"


def namespace_functions(tool: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """(namespace, function tool) for each function of a `namespace` tool."""
    if not isinstance(tool, dict) or tool.get("type") != "namespace" or not isinstance(tool.get("name"), str):
        return
    for child in tool.get("tools") or ():
        if isinstance(child, dict) and child.get("type") == "function" and isinstance(child.get("name"), str):
            yield tool["name"], child


def loaded_tools(req: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The tools the conversation loaded on the way: `tool_search_output` and `additional_tools` items."""
    inp = req.get("input")
    if not isinstance(inp, list):
        return
    for item in inp:
        if isinstance(item, dict) and item.get("type") in ("tool_search_output", "additional_tools"):
            for tool in item.get("tools") or ():
                if isinstance(tool, dict):
                    yield tool


def deferred_functions(req: dict[str, Any]) -> list[dict[str, Any]]:
    """Chat function definitions for the request's tool_search and namespaced tools (in `tools[]` first,
    then those the conversation loaded, plain functions among them), each name once."""
    out: dict[str, dict[str, Any]] = {}
    for tool in req.get("tools") or ():
        _add(out, tool, plain=False)  # tools[]' plain functions: translate_responses carries them
    for tool in loaded_tools(req):
        _add(out, tool, plain=True)
    return list(out.values())


def _add(out: dict[str, dict[str, Any]], tool: Any, *, plain: bool) -> None:
    if client_search(tool):
        out.setdefault(TOOL_SEARCH, _function(TOOL_SEARCH, tool))
    elif plain and tool.get("type") == "function" and isinstance(tool.get("name"), str):
        out.setdefault(tool["name"], _function(tool["name"], tool))
    for namespace, child in namespace_functions(tool):
        name = flat_name(namespace, child["name"])
        desc = child.get("description") if isinstance(child.get("description"), str) else ""
        about = tool.get("description")
        if isinstance(about, str) and about:  # the namespace's own text says what its tools are for
            desc = f"{desc}\n\n({namespace}: {about})" if desc else f"({namespace}: {about})"
        out.setdefault(name, _function(name, {**child, "description": desc}))


def _function(name: str, tool: dict[str, Any]) -> dict[str, Any]:
    fn: dict[str, Any] = {"name": name}
    if isinstance(tool.get("description"), str) and tool["description"]:
        fn["description"] = tool["description"]
    params = tool.get("parameters")
    fn["parameters"] = params if isinstance(params, dict) else {"type": "object", "properties": {}}
    if isinstance(tool.get("strict"), bool):
        fn["strict"] = tool["strict"]
    return fn


def namespaced(req: dict[str, Any] | None) -> dict[str, tuple[str, str]]:
    """Upstream function name → (namespace, name) for every namespaced tool of the request."""
    out: dict[str, tuple[str, str]] = {}
    if not req:
        return out
    for tool in (*(req.get("tools") or ()), *loaded_tools(req)):
        for namespace, child in namespace_functions(tool):
            out[flat_name(namespace, child["name"])] = (namespace, child["name"])
    return out


# ---------------------------------------------------------------- history items → chat


def search_call_arguments(item: dict[str, Any]) -> str:
    args = item.get("arguments")
    if isinstance(args, str):
        return args
    return orjson.dumps(args if isinstance(args, dict) else {}).decode()


def search_output_text(item: dict[str, Any]) -> str:
    """What a `tool_search_output` tells the route: the tools now available, by their upstream names."""
    lines = []
    for tool in item.get("tools") or ():
        if client_search(tool) or not isinstance(tool, dict):
            continue
        if tool.get("type") == "function" and isinstance(tool.get("name"), str):
            lines.append(f"- {tool['name']}: {tool.get('description') or ''}".rstrip(": "))
        for namespace, child in namespace_functions(tool):
            lines.append(
                f"- {flat_name(namespace, child['name'])}: {child.get('description') or ''}".rstrip(": ")
            )
    if not lines:
        return "No tools matched the search."
    return "These tools are now available to call:\n" + "\n".join(lines)


# ---------------------------------------------------------------- route's calls → client items


def search_call_item(item_id: str, call_id: str, arguments: str) -> dict[str, Any]:
    """The `tool_search_call` item Codex runs for a route's call of the `tool_search` function."""
    try:
        args = orjson.loads(arguments) if arguments else {}
    except orjson.JSONDecodeError:
        args = {"query": arguments}
    return {
        "id": item_id,
        "type": "tool_search_call",
        "call_id": call_id,
        "execution": "client",
        "arguments": args if isinstance(args, dict) else {"query": str(args)},
        "status": "completed",
    }
