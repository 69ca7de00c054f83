"""Request translation: Anthropic Messages → OpenAI Chat Completions (streaming.md §4.5).

The reverse of `translate_request.openai_to_anthropic` (which re-exports this). Thinking blocks become
`reasoning_content` plus the signed `thinking_blocks` side field; tool results become `tool` messages
placed right after the assistant's tool calls; Anthropic server tools and server-tool turns have no
equivalent and are left out (`loss.translation_losses` names them: they change the answer).
"""

from __future__ import annotations

from typing import Any

from modelpool.protocols.effort import read_effort, write_effort
from modelpool.protocols.errors import ClientError
from modelpool.protocols.mapping import (
    SIDE_FIELD,
    client_shape_errors,
    dump_arguments,
    fill_reasoning_content,
)


@client_shape_errors
def anthropic_to_openai(req: dict[str, Any], *, keep_signatures: bool = True) -> dict[str, Any]:
    """`keep_signatures` writes the `thinking_blocks` side field; pass False for upstreams known to
    reject unknown message fields (they cannot use Anthropic signatures anyway)."""
    out: dict[str, Any] = {"model": req.get("model")}
    messages: list[dict[str, Any]] = []
    system = req.get("system")
    if isinstance(system, str) and system:
        messages.append({"role": "system", "content": system})
    elif isinstance(system, list) and system:
        texts = [b.get("text") for b in system if isinstance(b, dict) and b.get("type") == "text"]
        messages.append({"role": "system", "content": "\n\n".join(t for t in texts if isinstance(t, str))})
    for i, msg in enumerate(req.get("messages") or []):
        content = msg.get("content")
        if isinstance(content, list):
            # Shape errors are the client's (400), even past `anthropic.check_request`.
            content = [b if isinstance(b, dict) else {"type": type(b).__name__} for b in content]
        if isinstance(content, str):
            messages.append({"role": msg.get("role"), "content": content})
        elif not isinstance(content, list):
            raise ClientError(400, f"messages.{i}.content: a string or a list of content blocks is required")
        elif msg.get("role") == "assistant":
            messages.append(_assistant_message(content, i, keep_signatures))
        else:
            messages.extend(_user_messages(content, i))
    fill_reasoning_content(messages)
    out["messages"] = messages
    if isinstance(req.get("max_tokens"), int):
        out["max_tokens"] = req["max_tokens"]
    if req.get("stop_sequences"):
        out["stop"] = list(req["stop_sequences"])
    for key in ("temperature", "top_p"):
        if isinstance(req.get(key), int | float):
            out[key] = req[key]
    metadata = req.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("user_id"), str):
        out["user"] = metadata["user_id"]
    if req.get("stream"):
        out["stream"] = True
        out["stream_options"] = {"include_usage": True}
    _tools_to_openai(req, out)
    cfg = req.get("output_config")
    fmt = cfg.get("format") if isinstance(cfg, dict) else None
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        out["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "output", "schema": fmt.get("schema")},
        }
    effort = read_effort("anthropic", req)
    return write_effort("openai", out, effort) if effort is not None else out


def _image_url(block: dict[str, Any]) -> dict[str, Any]:
    src = block.get("source") or {}
    if src.get("type") == "base64":
        return {
            "type": "image_url",
            "image_url": {"url": f"data:{src.get('media_type')};base64,{src.get('data')}"},
        }
    if src.get("type") == "url":
        return {"type": "image_url", "image_url": {"url": src.get("url")}}
    raise ClientError(400, f"image source type {src.get('type')!r} is not supported for this route")


def _user_parts(blocks: Any, where: str) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for j, b in enumerate(blocks if isinstance(blocks, list) else []):
        kind = b.get("type") if isinstance(b, dict) else type(b).__name__
        if kind == "text":
            parts.append({"type": "text", "text": b.get("text", "")})
        elif kind == "image":
            parts.append(_image_url(b))
        elif kind == "document" and (b.get("source") or {}).get("type") == "base64":
            src = b["source"]
            url = f"data:{src.get('media_type')};base64,{src.get('data')}"
            parts.append(
                {"type": "file", "file": {"file_data": url, "filename": b.get("title") or "document"}}
            )
        elif kind == "document" and (b.get("source") or {}).get("type") == "text":
            parts.append({"type": "text", "text": b["source"].get("data", "")})
        else:
            at = f"{where}.content.{j}"
            raise ClientError(
                400, f"{at}: content block type {kind!r} is not supported for this route", param=at
            )
    return parts


def _user_messages(blocks: list[dict[str, Any]], i: int) -> list[dict[str, Any]]:
    """Tool results become `tool` messages, which must directly follow the assistant's tool calls, so they
    go first; the rest of the turn becomes one user message after them."""
    tools: list[dict[str, Any]] = []
    rest: list[dict[str, Any]] = []
    extra: list[dict[str, Any]] = []  # images returned inside tool results
    for b in blocks:
        if b.get("type") == "tool_result":
            content = b.get("content")
            if isinstance(content, list):
                parts = _user_parts(content, f"messages.{i}.tool_result")
                texts = [p["text"] for p in parts if p["type"] == "text"]
                # A tool message carries text only; images in a result ride in the user message after it.
                extra.extend(p for p in parts if p["type"] != "text")
                content = "\n".join(texts)
            tools.append({"role": "tool", "tool_call_id": b.get("tool_use_id"), "content": content or ""})
        else:
            rest.append(b)
    out = tools
    parts = _user_parts(rest, f"messages.{i}") + extra
    if len(parts) == 1 and parts[0]["type"] == "text":
        out.append({"role": "user", "content": parts[0]["text"]})
    elif parts:
        out.append({"role": "user", "content": parts})
    return out


def _assistant_message(blocks: list[dict[str, Any]], i: int, keep_signatures: bool) -> dict[str, Any]:
    texts: list[str] = []
    reasoning: list[str] = []
    thinking_blocks: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for j, b in enumerate(blocks):
        kind = b.get("type")
        if kind == "text":
            texts.append(b.get("text", ""))
        elif kind == "thinking":
            reasoning.append(b.get("thinking", ""))
            thinking_blocks.append(
                {"type": "thinking", "thinking": b.get("thinking", ""), "signature": b.get("signature")}
            )
        elif kind == "redacted_thinking":
            thinking_blocks.append({"type": "redacted_thinking", "data": b.get("data")})
        elif kind == "tool_use":
            fn = {"name": b.get("name"), "arguments": dump_arguments(b.get("input"))}
            calls.append({"id": b.get("id"), "type": "function", "function": fn})
        elif kind in ("server_tool_use", "web_search_tool_result", "web_fetch_tool_result"):
            continue  # server-side tool turns: the OpenAI side has no equivalent and needs none
        else:
            at = f"messages.{i}.content.{j}"
            raise ClientError(
                400, f"{at}: content block type {kind!r} is not supported for this route", param=at
            )
    msg: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
    if reasoning:
        msg["reasoning_content"] = "".join(reasoning)
    if thinking_blocks and keep_signatures:
        msg[SIDE_FIELD] = thinking_blocks
    if calls:
        msg["tool_calls"] = calls
    return msg


def _tools_to_openai(req: dict[str, Any], out: dict[str, Any]) -> None:
    tools = []
    for tool in req.get("tools") or []:
        if not isinstance(tool, dict) or tool.get("type") not in (None, "custom") or "name" not in tool:
            continue  # Anthropic server tools (web_search_…, bash_…): no OpenAI-compatible equivalent
        fn: dict[str, Any] = {
            "name": tool["name"],
            "parameters": tool.get("input_schema") or {"type": "object"},
        }
        if tool.get("description"):
            fn["description"] = tool["description"]
        tools.append({"type": "function", "function": fn})
    if not tools:
        return
    out["tools"] = tools
    choice = req.get("tool_choice")
    if isinstance(choice, dict):
        kind = choice.get("type")
        if kind == "tool":
            out["tool_choice"] = {"type": "function", "function": {"name": choice.get("name")}}
        elif kind in ("auto", "any", "none"):
            out["tool_choice"] = {"auto": "auto", "any": "required", "none": "none"}[kind]
        if choice.get("disable_parallel_tool_use"):
            out["parallel_tool_calls"] = False
