"""Request translation: OpenAI Chat Completions ⇄ Anthropic Messages (streaming.md §4.5).

Pure functions on decoded bodies. What cannot be expressed on the other side is left out (sampling
knobs, server-side tools) or refused with a 400 naming it (an unknown content part, an audio part for
Anthropic) — never a 500. Nothing is left out silently: `loss.translation_losses` names every such field
and says whether it changes the answer; a relay should translate with `translate_any.translate_request_for`.

Thinking history. Anthropic thinking blocks must go back verbatim, signature included; OpenAI-shaped
messages carry them in the LiteLLM side field `thinking_blocks` next to `reasoning_content`, so an
Anthropic → OpenAI → Anthropic round trip keeps signatures. Unsigned reasoning (DeepSeek's
`reasoning_content`) cannot be replayed to Anthropic (it rejects unsigned thinking) and is dropped there.
"""

from __future__ import annotations

from typing import Any

import orjson

from modelpool.protocols.effort import read_effort, write_effort
from modelpool.protocols.errors import ClientError
from modelpool.protocols.mapping import SIDE_FIELD, client_shape_errors, parse_arguments
from modelpool.protocols.request_from_anthropic import anthropic_to_openai

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "anthropic_to_openai",
    "drop_unsigned_thinking",
    "image_block",
    "openai_to_anthropic",
]

DEFAULT_MAX_TOKENS = 4096  # Anthropic requires max_tokens; OpenAI requests often have none


# ---------------------------------------------------------------- OpenAI → Anthropic


@client_shape_errors
def openai_to_anthropic(req: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"model": req.get("model")}
    system: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    for i, msg in enumerate(req.get("messages") or []):
        role = msg.get("role")
        if role in ("system", "developer"):
            system.extend(_user_blocks(msg.get("content"), f"messages[{i}]", text_only=True))
        elif role == "user":
            _append(turns, "user", _user_blocks(msg.get("content"), f"messages[{i}]"))
        elif role == "assistant":
            _append(turns, "assistant", _assistant_blocks(msg, i))
        elif role in ("tool", "function"):
            _append(turns, "user", [_tool_result(msg, i)])
        else:
            raise ClientError(
                400, f"messages[{i}].role: unsupported role {role!r}", param=f"messages[{i}].role"
            )
    for turn in turns:
        blocks = turn["content"]
        # Anthropic wants a user turn's tool_result blocks before anything else in it.
        blocks.sort(key=lambda b: b.get("type") != "tool_result")
        if len(blocks) == 1 and blocks[0].get("type") == "text" and set(blocks[0]) == {"type", "text"}:
            turn["content"] = blocks[0]["text"]
    if system:
        plain = all(set(b) == {"type", "text"} for b in system)
        out["system"] = "\n\n".join(b["text"] for b in system) if plain else system
    out["messages"] = turns
    limit = req.get("max_completion_tokens") or req.get("max_tokens")
    out["max_tokens"] = limit if isinstance(limit, int) and limit > 0 else DEFAULT_MAX_TOKENS
    stop = req.get("stop")
    stops = [stop] if isinstance(stop, str) else stop if isinstance(stop, list) else []
    # Anthropic refuses whitespace-only stop sequences.
    stops = [s for s in stops if isinstance(s, str) and s.strip()]
    if stops:
        out["stop_sequences"] = stops
    temperature = req.get("temperature")
    if isinstance(temperature, int | float):
        out["temperature"] = min(max(float(temperature), 0.0), 1.0)  # OpenAI 0–2, Anthropic 0–1
    if isinstance(req.get("top_p"), int | float):
        out["top_p"] = req["top_p"]
    if isinstance(req.get("user"), str):
        out["metadata"] = {"user_id": req["user"]}
    if req.get("stream"):
        out["stream"] = True
    _tools_to_anthropic(req, out)
    fmt = req.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        schema = (fmt.get("json_schema") or {}).get("schema")
        if isinstance(schema, dict):
            out["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
    effort = read_effort("openai", req)
    return write_effort("anthropic", out, effort) if effort is not None else out


def _append(turns: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    """Anthropic needs alternating roles: consecutive same-role turns merge (tool results → one turn)."""
    if not blocks:
        return
    if turns and turns[-1]["role"] == role:
        turns[-1]["content"].extend(blocks)
    else:
        turns.append({"role": role, "content": blocks})


def _user_blocks(content: Any, where: str, text_only: bool = False) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if content is None:
        return []
    if not isinstance(content, list):
        raise ClientError(400, f"{where}.content must be a string or an array of parts", param=where)
    blocks: list[dict[str, Any]] = []
    for j, part in enumerate(content):
        at = f"{where}.content[{j}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("text", "input_text", "refusal"):
            text = part.get("text") if kind != "refusal" else part.get("refusal")
            if isinstance(text, str) and text:
                block: dict[str, Any] = {"type": "text", "text": text}
                if isinstance(part.get("cache_control"), dict):
                    block["cache_control"] = part["cache_control"]
                blocks.append(block)
        elif kind == "image_url" and not text_only:
            url = part.get("image_url")
            blocks.append(image_block(url.get("url") if isinstance(url, dict) else url, at))
        elif kind == "file" and not text_only:
            blocks.append(_document_block(part.get("file"), at))
        else:
            raise ClientError(
                400, f"{at}: content part type {kind!r} is not supported for this route", param=at
            )
    return blocks


def image_block(url: Any, where: str) -> dict[str, Any]:
    """An image URL (data: or http(s):) as an Anthropic image block."""
    if isinstance(url, str) and url.startswith("data:"):
        head, sep, data = url.partition(",")
        if sep and head.endswith(";base64"):
            return {"type": "image", "source": {"type": "base64", "media_type": head[5:-7], "data": data}}
    elif isinstance(url, str) and url.startswith(("http://", "https://")):
        return {"type": "image", "source": {"type": "url", "url": url}}
    raise ClientError(400, f"{where}: image_url must be a base64 data: URL or an http(s) URL", param=where)


def _document_block(file: Any, where: str) -> dict[str, Any]:
    data = file.get("file_data") if isinstance(file, dict) else None
    if isinstance(data, str) and data.startswith("data:"):
        head, _, payload = data.partition(",")
        return {"type": "document", "source": {"type": "base64", "media_type": head[5:-7], "data": payload}}
    raise ClientError(400, f"{where}: only inline file_data (data: URL) files can be sent", param=where)


def _assistant_blocks(msg: dict[str, Any], i: int) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for tb in msg.get(SIDE_FIELD) or []:
        if not isinstance(tb, dict):
            continue
        if tb.get("type") == "thinking" and tb.get("signature"):
            blocks.append(
                {"type": "thinking", "thinking": tb.get("thinking") or "", "signature": tb["signature"]}
            )
        elif tb.get("type") == "redacted_thinking" and tb.get("data"):
            blocks.append({"type": "redacted_thinking", "data": tb["data"]})
    blocks.extend(_user_blocks(msg.get("content"), f"messages[{i}]", text_only=True))
    for tc in msg.get("tool_calls") or []:
        if not isinstance(tc, dict):
            continue
        fn = tc.get("function") or {}
        blocks.append(
            {
                "type": "tool_use",
                "id": tc.get("id") or f"toolu_{i}_{len(blocks)}",
                "name": fn.get("name") or "",
                "input": parse_arguments(fn.get("arguments")),
            }
        )
    return blocks


def _tool_result(msg: dict[str, Any], i: int) -> dict[str, Any]:
    content = msg.get("content")
    result: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": msg.get("tool_call_id") or msg.get("name"),
    }
    if isinstance(content, list):
        result["content"] = _user_blocks(content, f"messages[{i}]")
    else:
        result["content"] = content if isinstance(content, str) else orjson.dumps(content).decode()
    return result


def _tools_to_anthropic(req: dict[str, Any], out: dict[str, Any]) -> None:
    tools = []
    for k, tool in enumerate(req.get("tools") or []):
        if not isinstance(tool, dict) or tool.get("type", "function") != "function":
            kind = tool.get("type") if isinstance(tool, dict) else None
            raise ClientError(400, f"tools[{k}]: tool type {kind!r} is not supported for this route")
        fn = tool.get("function") or {}
        t: dict[str, Any] = {
            "name": fn.get("name"),
            "input_schema": fn.get("parameters") or {"type": "object", "properties": {}},
        }
        if fn.get("description"):
            t["description"] = fn["description"]
        tools.append(t)
    if tools:
        out["tools"] = tools
    choice = req.get("tool_choice")
    mapped: dict[str, Any] | None = None
    if choice == "auto":
        mapped = {"type": "auto"}
    elif choice == "required":
        mapped = {"type": "any"}
    elif choice == "none":
        mapped = {"type": "none"}
    elif isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name") or choice.get("name")
        mapped = {"type": "tool", "name": name}
    if req.get("parallel_tool_calls") is False and tools and (mapped is None or mapped["type"] != "none"):
        mapped = {**(mapped or {"type": "auto"}), "disable_parallel_tool_use": True}
    if mapped is not None and tools:  # a tool_choice without tools is refused by Anthropic
        out["tool_choice"] = mapped


@client_shape_errors
def drop_unsigned_thinking(req: dict[str, Any]) -> dict[str, Any]:
    """For an Anthropic route: thinking blocks without a signature (reasoning a non-Anthropic route
    produced, shown to an Anthropic client with `signature: ""`) would be rejected; drop them."""
    messages = []
    changed = False
    for msg in req.get("messages") or []:
        content = msg.get("content") if isinstance(msg, dict) else None
        if msg.get("role") == "assistant" and isinstance(content, list):
            kept = [b for b in content if not (b.get("type") == "thinking" and not b.get("signature"))]
            if len(kept) != len(content):
                changed = True
                msg = {**msg, "content": kept or [{"type": "text", "text": "(no content)"}]}
        messages.append(msg)
    return {**req, "messages": messages} if changed else req
