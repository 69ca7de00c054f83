"""`translation_losses` for a Responses client on a chat or (via chat) Anthropic route: what
`translate_responses` (and `openai_to_anthropic` after it) leave out, field by field."""

from __future__ import annotations

from typing import Any

from modelpool.protocols.loss_walk import HOSTED as _HOSTED
from modelpool.protocols.loss_walk import Walk as _Walk
from modelpool.protocols.loss_walk import has_text as _text
from modelpool.protocols.translate_deferred import client_search, namespace_functions
from modelpool.protocols.translate_reasoning import open_sealed

# ---------------------------------------------------------------- Responses → chat (→ Anthropic)

_RESP_TOP_KNOWN = {
    "model",
    "input",
    "instructions",
    "temperature",
    "top_p",
    "stream",
    "prompt_cache_key",
    "max_output_tokens",
    "user",
    "safety_identifier",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "reasoning",
    "text",
    "store",
    "include",
}
# Would change the answer: context held by OpenAI's servers.
_RESP_STATEFUL = ("previous_response_id", "conversation", "prompt")
_ITEM_BOOKKEEPING = ("type", "id", "status")


def responses_losses(w: _Walk, body: dict[str, Any], target: str) -> None:
    anth = target == "anthropic"
    for key in _RESP_STATEFUL:
        if body.get(key):
            w.lose(key, True, why="state held by another server")
    w.extra(body, "", _RESP_TOP_KNOWN | set(_RESP_STATEFUL))
    if anth and "prompt_cache_key" in body:
        w.lose("prompt_cache_key", False)
    if _text(body.get("user")) and _text(body.get("safety_identifier")):
        w.lose("safety_identifier", False, why="user wins")
    if body.get("store") is True:
        w.lose("store", False, why="translated replies are not stored")
    for inc in body.get("include") or []:
        if inc != "reasoning.encrypted_content":  # honoured: signed reasoning comes back encrypted
            w.lose(f"include[{inc}]", False)
    reasoning = body.get("reasoning")
    if isinstance(reasoning, dict):
        w.extra(reasoning, "reasoning", ("effort",))
    text = body.get("text")
    if isinstance(text, dict):
        w.extra(text, "text", ("format",))
        fmt = text.get("format")
        if isinstance(fmt, dict):
            kind = fmt.get("type")
            if kind == "json_schema":
                # An Anthropic route gets the schema only (output_config.format).
                w.extra(
                    fmt,
                    "text.format",
                    ("type", "schema") if anth else ("type", "name", "schema", "strict", "description"),
                )
            elif kind == "json_object" and anth:
                w.lose("text.format", False, why="JSON mode: the prompt asks for JSON")
            elif kind not in ("json_object", "text"):
                w.lose("text.format", False)
    carried = _responses_tools(w, body.get("tools"), anth)
    _responses_choice(w, body, carried)
    inp = body.get("input")
    if isinstance(inp, list):
        _responses_items(w, inp, anth)


def _responses_tools(w: _Walk, tools: Any, anth: bool) -> int:
    carried = 0
    for k, tool in enumerate(tools or []):
        kind = tool.get("type")
        at = f"tools[{k}]"
        if kind == "function":
            carried += 1
            w.extra(tool, at, ("type", "name", "description", "parameters", "strict"))
            if anth and tool.get("strict") is not None:
                w.lose(f"{at}.strict", False)
        elif kind == "custom" and isinstance(tool.get("name"), str):
            carried += 1
            w.extra(tool, at, ("type", "name", "description", "format"))
        elif kind == "local_shell":
            carried += 1
            w.extra(tool, at, ("type",))
        elif client_search(tool):  # Codex runs the search itself: a function upstream
            carried += 1
            w.extra(tool, at, ("type", "execution", "description", "parameters"))
        elif kind == "namespace" and any(namespace_functions(tool)):
            carried += 1
            _namespace(w, tool, at)
        else:
            # Offered only: left out by default (the model lacks it), refused under `refuse`.
            w.lose(at, True, f"tools[{tool.get('name') or kind}]", why=_HOSTED, offered=True)
    return carried


_NAMESPACE_CHILD = ("type", "name", "description", "parameters", "strict", "defer_loading")


def _namespace(w: _Walk, tool: dict[str, Any], at: str) -> None:
    w.extra(tool, at, ("type", "name", "description", "tools"))
    for j, child in enumerate(tool.get("tools") or []):
        where = f"{at}.tools[{j}]"
        if isinstance(child, dict) and child.get("type") == "function" and isinstance(child.get("name"), str):
            w.extra(child, where, _NAMESPACE_CHILD)
        else:
            kind = child.get("type") if isinstance(child, dict) else None
            w.lose(where, True, f"tools[{tool.get('name')}.{kind}]", why=_HOSTED, offered=True)


def _responses_choice(w: _Walk, body: dict[str, Any], carried: int) -> None:
    if not carried:
        for key in ("tool_choice", "parallel_tool_calls"):
            if key in body:
                w.lose(key, False, why="no tool is carried")
        return
    choice = body.get("tool_choice")
    if choice is None or choice in ("auto", "none", "required"):
        return
    if isinstance(choice, dict) and choice.get("type") in ("function", "custom", "local_shell"):
        return
    w.lose("tool_choice", False)


def _responses_items(w: _Walk, items: list[Any], anth: bool) -> None:
    pending: list[int] = []  # reasoning items waiting for an assistant turn (a trailing one is lost)
    for i, item in enumerate(items):
        kind = item.get("type") or "message"
        at = f"input[{i}]"
        if kind == "message":
            _responses_message(w, item, at, anth)
            if item.get("role") == "assistant":
                pending.clear()
        elif kind in ("tool_search_call", "tool_search_output") and item.get("execution") != "client":
            w.lose(at, True, why="a search OpenAI's servers ran")
        elif kind in ("tool_search_call", "tool_search_output", "additional_tools"):
            if kind == "tool_search_call":  # an assistant output item: it takes the pending reasoning
                pending.clear()
            known = {
                "tool_search_call": ("call_id", "execution", "arguments"),
                "tool_search_output": ("call_id", "execution", "tools"),
                "additional_tools": ("role", "tools"),
            }[kind]
            w.extra(item, at, (*_ITEM_BOOKKEEPING, *known))
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            pending.clear()
            known = ("call_id", "name", "arguments", "namespace")
            if kind == "custom_tool_call":
                known = ("call_id", "name", "input")
            elif kind == "local_shell_call":
                known = ("call_id", "action")
                action = item.get("action")
                if isinstance(action, dict):
                    fields = ("type", "command", "working_directory", "timeout_ms", "env", "user")
                    w.extra(action, f"{at}.action", fields)
            w.extra(item, at, (*_ITEM_BOOKKEEPING, *known))
        elif kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            w.extra(item, at, (*_ITEM_BOOKKEEPING, "call_id", "output"))
            output = item.get("output")
            if isinstance(output, list):
                _parts(w, output, at, text_only=True, anth=anth)
        elif kind == "reasoning":
            _reasoning(w, item, at, anth)
            pending.append(i)
        else:
            w.lose(at, True, why=f"input item type {kind!r} cannot be translated")
    for i in pending:
        w.lose(f"input[{i}]", False, why="reasoning after the last assistant turn")


def _reasoning(w: _Walk, item: dict[str, Any], at: str, anth: bool) -> None:
    w.extra(item, at, (*_ITEM_BOOKKEEPING, "summary", "content", "encrypted_content"))
    content, summary = item.get("content"), item.get("summary")
    if content and summary and any(_text(p.get("text")) for p in summary if isinstance(p, dict)):
        w.lose(f"{at}.summary", False, why="the full reasoning text is carried instead")
    sealed = open_sealed(item.get("encrypted_content"))
    if item.get("encrypted_content") and sealed is None:
        w.lose(f"{at}.encrypted_content", True, why="another provider's encrypted reasoning")
    if anth and (sealed is None or sealed[0] == "redacted"):  # a redacted block carries no text
        parts = content or summary or []
        if any(_text(p.get("text")) for p in parts if isinstance(p, dict)):
            # Anthropic refuses thinking without its signature.
            w.lose(f"{at}.content" if content else f"{at}.summary", False, why="unsigned reasoning")


def _responses_message(w: _Walk, item: dict[str, Any], at: str, anth: bool) -> None:
    w.extra(item, at, (*_ITEM_BOOKKEEPING, "role", "content"))
    role = item.get("role")
    content = item.get("content")
    if role not in ("assistant", "user", "system", "developer"):
        w.lose(f"{at}.role", True, why=f"role {role!r} cannot be translated")
    elif isinstance(content, list):
        text_only = role == "assistant" or (anth and role in ("system", "developer"))
        _parts(w, content, at, text_only=text_only, anth=anth)


_TEXT_PARTS = ("input_text", "output_text", "text")


def _parts(w: _Walk, parts: list[Any], at: str, *, text_only: bool, anth: bool) -> None:
    """Responses content parts (message content, or a tool output's list)."""
    for j, part in enumerate(parts):
        where = f"{at}.content[{j}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in _TEXT_PARTS:
            w.extra({k: v for k, v in part.items() if v != []}, where, ("type", "text"))
        elif kind == "refusal" and text_only:
            w.extra(part, where, ("type", "refusal"))
        elif kind == "input_image" and not text_only and isinstance(part.get("image_url"), str):
            w.extra(part, where, ("type", "image_url", "detail"))
            url = part["image_url"]
            if anth and not (url.startswith(("http://", "https://")) or ";base64," in url[:200]):
                w.lose(where, True, why="an Anthropic route takes base64 data: or http(s) images only")
            elif anth and part.get("detail"):
                w.lose(f"{where}.detail", False)
        elif kind == "input_file" and not text_only and isinstance(part.get("file_data"), str):
            w.extra(part, where, ("type", "file_data", "filename"))
            if anth:
                if not part["file_data"].startswith("data:"):
                    w.lose(where, True, why="an Anthropic route takes inline data: files only")
                elif part.get("filename"):
                    w.lose(f"{where}.filename", False)
        else:
            w.lose(where, True, why=f"content part type {kind!r} cannot be translated")
