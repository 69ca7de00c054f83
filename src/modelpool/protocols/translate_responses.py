"""Request translation: OpenAI Responses → Chat Completions (→ Anthropic via chat).

Input items map onto chat messages: messages by role, `function_call` items onto the preceding
assistant message's `tool_calls`, `function_call_output` onto `tool` messages, and `reasoning` items
onto the next assistant message's `reasoning_content` — with modelpool's own marked `encrypted_content`
read back as the Anthropic thinking signature (or redacted thinking) it wrote there (`translate_reasoning`),
so reasoning survives a Responses client on an Anthropic route. `custom` and `local_shell` tools and their
history items are carried as function tools and calls (`translate_tools`), and so are Codex's
`tool_search` and `namespace` tools (`translate_deferred`). Hosted tools (web_search,
file_search, …) and another provider's encrypted reasoning have no chat equivalent and are left out —
`loss.translation_losses` names each such field, so nothing is lost silently; items that need server
state (`item_reference`) are refused.
"""

from __future__ import annotations

from typing import Any

import orjson

from modelpool.protocols.effort import read_effort, write_effort
from modelpool.protocols.errors import ClientError
from modelpool.protocols.mapping import SIDE_FIELD, client_shape_errors, fill_reasoning_content
from modelpool.protocols.translate_deferred import (
    TOOL_SEARCH,
    deferred_functions,
    flat_name,
    search_call_arguments,
    search_output_text,
)
from modelpool.protocols.translate_reasoning import open_sealed
from modelpool.protocols.translate_request import openai_to_anthropic
from modelpool.protocols.translate_tools import (
    LOCAL_SHELL,
    custom_call_arguments,
    function_for,
    local_shell_arguments,
)

_PASS = ("temperature", "top_p", "stream", "prompt_cache_key")


@client_shape_errors
def responses_to_openai(req: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"model": req.get("model")}
    messages: list[dict[str, Any]] = []
    if isinstance(req.get("instructions"), str) and req["instructions"]:
        messages.append({"role": "system", "content": req["instructions"]})
    inp = req.get("input")
    if isinstance(inp, str):
        messages.append({"role": "user", "content": inp})
    else:
        _items(inp or [], messages)
        fill_reasoning_content(messages)
    out["messages"] = messages
    for key in _PASS:
        if key in req:
            out[key] = req[key]
    if isinstance(req.get("max_output_tokens"), int):
        out["max_tokens"] = req["max_output_tokens"]
    user = req.get("user") or req.get("safety_identifier")
    if isinstance(user, str):
        out["user"] = user
    if req.get("stream"):
        out["stream_options"] = {"include_usage": True}
    _tools(req, out)
    fmt = (req.get("text") or {}).get("format") if isinstance(req.get("text"), dict) else None
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        schema = {k: fmt[k] for k in ("name", "schema", "strict", "description") if k in fmt}
        out["response_format"] = {"type": "json_schema", "json_schema": schema}
    elif isinstance(fmt, dict) and fmt.get("type") == "json_object":
        out["response_format"] = {"type": "json_object"}
    effort = read_effort("responses", req)
    return write_effort("openai", out, effort) if effort is not None else out


def responses_to_anthropic(req: dict[str, Any]) -> dict[str, Any]:
    return openai_to_anthropic(responses_to_openai(req))


def _items(items: list[Any], messages: list[dict[str, Any]]) -> None:
    pending_reasoning: list[dict[str, Any]] = []  # reasoning items waiting for their assistant turn

    def assistant() -> dict[str, Any]:
        """The assistant message the next output item belongs to (opened when needed)."""
        last = messages[-1] if messages else None
        # Reasoning opens a turn; otherwise output items of one turn share one assistant message.
        if last is None or last["role"] != "assistant" or pending_reasoning:
            last = {"role": "assistant", "content": None}
            messages.append(last)
        if pending_reasoning:
            last["reasoning_content"] = "".join(r["thinking"] for r in pending_reasoning)
            if any(r.get("signature") or r["type"] == "redacted_thinking" for r in pending_reasoning):
                last[SIDE_FIELD] = [_side_block(r) for r in pending_reasoning]
            pending_reasoning.clear()
        return last

    shell_ids: dict[str, str] = {}  # local_shell_call item id → call_id (outputs may name either)
    for i, item in enumerate(items):
        kind = item.get("type") or "message"
        where = f"input[{i}]"
        if kind in ("tool_search_call", "tool_search_output") and item.get("execution") != "client":
            continue  # a search OpenAI's servers ran: left out, named by loss.translation_losses
        if kind == "message":
            role = item.get("role")
            if role == "assistant":
                msg = assistant()
                text = _text(item.get("content"), where)
                if text:
                    msg["content"] = (msg.get("content") or "") + text
            elif role in ("user", "system", "developer"):
                messages.append({"role": role, "content": _content(item.get("content"), where)})
            else:
                raise ClientError(400, f"{where}.role: unsupported role {role!r}", param=f"{where}.role")
        elif kind in ("function_call", "custom_tool_call", "local_shell_call", "tool_search_call"):
            if kind == "function_call":
                name, args = item.get("name"), item.get("arguments") or ""
                if isinstance(item.get("namespace"), str) and isinstance(name, str):
                    name = flat_name(item["namespace"], name)
            elif kind == "tool_search_call":
                name, args = TOOL_SEARCH, search_call_arguments(item)
            elif kind == "custom_tool_call":
                name, args = item.get("name"), custom_call_arguments(item)
            else:
                name, args = LOCAL_SHELL, local_shell_arguments(item)
                if isinstance(item.get("id"), str) and isinstance(item.get("call_id"), str):
                    shell_ids[item["id"]] = item["call_id"]
            call = {
                "id": item.get("call_id"),
                "type": "function",
                "function": {"name": name, "arguments": args},
            }
            assistant().setdefault("tool_calls", []).append(call)
        elif kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            call_id = item.get("call_id")
            if call_id is None and kind == "local_shell_call_output":
                call_id = shell_ids.get(item.get("id"), item.get("id"))  # type: ignore[arg-type]
            output = item.get("output")
            if isinstance(output, list):
                output = _text(output, where)
            elif output is not None and not isinstance(output, str):
                output = orjson.dumps(output).decode()
            messages.append({"role": "tool", "tool_call_id": call_id, "content": output or ""})
        elif kind == "tool_search_output":
            # The tools found go up as function tools (`deferred_functions`); the result names them.
            text = search_output_text(item)
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": text})
        elif kind == "additional_tools":
            pass  # its tools go up as function tools (`deferred_functions`)
        elif kind == "reasoning":
            parts = item.get("content") or item.get("summary") or []
            text = "".join(p.get("text", "") for p in parts if isinstance(p, dict))
            block: dict[str, Any] = {"type": "thinking", "thinking": text}
            # Only modelpool's own marked value is a signature; another provider's encrypted reasoning
            # cannot be carried (reported by loss.translation_losses).
            sealed = open_sealed(item.get("encrypted_content"))
            if sealed is not None and sealed[0] == "signature":
                block["signature"] = sealed[1]
            elif sealed is not None:
                block = {"type": "redacted_thinking", "data": sealed[1], "thinking": text}
            pending_reasoning.append(block)
        else:
            raise ClientError(400, f"{where}: input item type {kind!r} is not supported", param=where)


def _side_block(r: dict[str, Any]) -> dict[str, Any]:
    if r["type"] == "redacted_thinking":
        return {"type": "redacted_thinking", "data": r["data"]}
    return dict(r)


def _content(content: Any, where: str) -> Any:
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for j, part in enumerate(content if isinstance(content, list) else []):
        kind = part.get("type") if isinstance(part, dict) else None
        at = f"{where}.content[{j}]"
        if kind in ("input_text", "output_text", "text"):
            parts.append({"type": "text", "text": part.get("text", "")})
        elif kind == "input_image":
            if not isinstance(part.get("image_url"), str):
                raise ClientError(
                    400, f"{at}: input_image needs an image_url (file_id is not supported)", param=at
                )
            image: dict[str, Any] = {"url": part["image_url"]}
            if part.get("detail"):
                image["detail"] = part["detail"]
            parts.append({"type": "image_url", "image_url": image})
        elif kind == "input_file" and isinstance(part.get("file_data"), str):
            file = {"file_data": part["file_data"], "filename": part.get("filename") or "file"}
            parts.append({"type": "file", "file": file})
        else:
            raise ClientError(400, f"{at}: content part type {kind!r} is not supported", param=at)
    return parts


def _text(content: Any, where: str) -> str:
    """Assistant/tool-output content as plain text (chat assistant turns are text)."""
    if isinstance(content, str):
        return content
    out = []
    for j, part in enumerate(content if isinstance(content, list) else []):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("output_text", "input_text", "text"):
            out.append(part.get("text", ""))
        elif kind == "refusal":
            out.append(part.get("refusal", ""))
        else:
            at = f"{where}.content[{j}]"
            raise ClientError(400, f"{at}: content part type {kind!r} is not supported here", param=at)
    return "".join(out)


def _tools(req: dict[str, Any], out: dict[str, Any]) -> None:
    tools = []
    for tool in req.get("tools") or []:
        if tool.get("type") == "function":
            keys = ("name", "description", "parameters", "strict")
            fn = {k: tool[k] for k in keys if tool.get(k) is not None}
        else:
            # custom / local_shell become function tools; hosted tools (web_search, file_search, …) need
            # OpenAI's servers and are reported by loss.translation_losses.
            fn = function_for(tool)  # type: ignore[assignment]
            if fn is None:
                continue
        tools.append({"type": "function", "function": fn})
    tools.extend({"type": "function", "function": fn} for fn in deferred_functions(req))
    if not tools:
        return
    out["tools"] = tools
    if isinstance(req.get("parallel_tool_calls"), bool):  # OpenAI refuses it without tools
        out["parallel_tool_calls"] = req["parallel_tool_calls"]
    choice = req.get("tool_choice")
    if choice in ("auto", "none", "required"):
        out["tool_choice"] = choice
    elif isinstance(choice, dict) and choice.get("type") in ("function", "custom"):
        out["tool_choice"] = {"type": "function", "function": {"name": choice.get("name")}}
    elif isinstance(choice, dict) and choice.get("type") == LOCAL_SHELL:
        out["tool_choice"] = {"type": "function", "function": {"name": LOCAL_SHELL}}
