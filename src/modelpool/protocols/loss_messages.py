"""`translation_losses` between the two message dialects: an Anthropic client on a chat route
(`anthropic_to_openai` without signatures) and a chat client on an Anthropic route (`openai_to_anthropic`)."""

from __future__ import annotations

from typing import Any

from modelpool.protocols.loss_walk import HOSTED as _HOSTED
from modelpool.protocols.loss_walk import Walk as _Walk
from modelpool.protocols.loss_walk import has_text as _text
from modelpool.protocols.loss_walk import plain_message

# ---------------------------------------------------------------- Anthropic → chat

_ANTH_TOP_KNOWN = {
    "model",
    "messages",
    "system",
    "max_tokens",
    "stop_sequences",
    "temperature",
    "top_p",
    "metadata",
    "stream",
    "tools",
    "tool_choice",
    "thinking",
    "output_config",
}
_ANTH_TOP_ALL = frozenset(_ANTH_TOP_KNOWN | {"mcp_servers"})
_SERVER_HISTORY = "server-side tool turn"


def anthropic_losses(w: _Walk, body: dict[str, Any]) -> None:
    if body.get("mcp_servers"):
        w.lose("mcp_servers", True, why=_HOSTED, offered=True)
    w.extra(body, "", _ANTH_TOP_ALL)
    metadata = body.get("metadata")
    if isinstance(metadata, dict):
        w.extra(metadata, "metadata", ("user_id",) if isinstance(metadata.get("user_id"), str) else ())
    cfg = body.get("output_config")
    if isinstance(cfg, dict):
        fmt = cfg.get("format")
        json_schema = isinstance(fmt, dict) and fmt.get("type") == "json_schema"
        w.extra(cfg, "output_config", ("effort", "format") if json_schema else ("effort",))
    system = body.get("system")
    if isinstance(system, list):
        for j, b in enumerate(system):
            if isinstance(b, dict) and b.get("type") == "text":
                w.extra(b, f"system[{j}]", ("type", "text"))
            else:
                w.lose(f"system[{j}]", False, why="only text blocks go into the system message")
    carried = 0
    for k, tool in enumerate(body.get("tools") or []):
        at = f"tools[{k}]"
        if isinstance(tool, dict) and tool.get("type") in (None, "custom") and "name" in tool:
            carried += 1
            w.extra(tool, at, ("type", "name", "input_schema", "description"))
        else:
            name = tool.get("name") or tool.get("type") if isinstance(tool, dict) else None
            w.lose(at, True, f"tools[{name}]", why=_HOSTED, offered=True)
    choice = body.get("tool_choice")
    if choice is not None:
        if not carried or not isinstance(choice, dict):
            w.lose("tool_choice", False, why="no tool is carried")
        else:
            w.extra(choice, "tool_choice", ("type", "name", "disable_parallel_tool_use"))
            if choice.get("type") not in ("tool", "auto", "any", "none"):
                w.lose("tool_choice.type", False)
    for i, msg in enumerate(body.get("messages") or []):
        if plain_message(msg):
            continue
        at = f"messages[{i}]"
        w.extra(msg, at, ("role", "content"))
        content = msg.get("content")
        if isinstance(content, list):
            if msg.get("role") == "assistant":
                _anthropic_assistant(w, content, at)
            else:
                _anthropic_user(w, content, at)


def _anthropic_assistant(w: _Walk, blocks: list[Any], at: str) -> None:
    for j, b in enumerate(blocks):
        where = f"{at}.content[{j}]"
        kind = b.get("type") if isinstance(b, dict) else None
        if kind == "text":
            w.extra(b, where, ("type", "text"))
        elif kind == "thinking":
            w.extra(b, where, ("type", "thinking"))  # the signature only Anthropic can verify
        elif kind == "redacted_thinking":
            w.lose(where, True, why="encrypted reasoning only Anthropic can read")
        elif kind == "tool_use":
            w.extra(b, where, ("type", "id", "name", "input"))
        elif kind in ("server_tool_use", "web_search_tool_result", "web_fetch_tool_result"):
            w.lose(where, True, kind, why=_SERVER_HISTORY)
        else:
            w.lose(where, True, why=f"content block type {kind!r} cannot be translated")


def _anthropic_user(w: _Walk, blocks: list[Any], at: str) -> None:
    for j, b in enumerate(blocks):
        where = f"{at}.content[{j}]"
        if isinstance(b, dict) and b.get("type") == "tool_result":
            w.extra(b, where, ("type", "tool_use_id", "content"))
            if isinstance(b.get("content"), list):
                _anthropic_parts(w, b["content"], where)
        else:
            _anthropic_parts(w, [b], at, offset=j)


def _anthropic_parts(w: _Walk, blocks: list[Any], at: str, offset: int = 0) -> None:
    for j, b in enumerate(blocks, offset):
        where = f"{at}.content[{j}]"
        kind = b.get("type") if isinstance(b, dict) else None
        src = b.get("source") if isinstance(b, dict) else None
        src_kind = src.get("type") if isinstance(src, dict) else None
        if kind == "text":
            w.extra(b, where, ("type", "text"))
        elif kind == "image" and src_kind in ("base64", "url"):
            w.extra(b, where, ("type", "source"))
            w.extra(src, f"{where}.source", ("type", "media_type", "data", "url"))  # type: ignore[arg-type]
        elif kind == "document" and src_kind in ("base64", "text"):
            if isinstance(b.get("citations"), dict) and b["citations"].get("enabled"):
                w.lose(f"{where}.citations", True, "citations", why="a chat route cannot cite documents")
            known = (
                ("type", "source", "citations", "title")
                if src_kind == "base64"
                else ("type", "source", "citations")
            )
            w.extra(b, where, known)
            if src_kind == "base64":
                w.extra(src, f"{where}.source", ("type", "media_type", "data"))  # type: ignore[arg-type]
            else:
                w.extra(src, f"{where}.source", ("type", "data", "media_type"))  # type: ignore[arg-type]
        else:
            w.lose(where, True, why=f"content block type {kind!r} cannot be translated")


# ---------------------------------------------------------------- chat → Anthropic

_CHAT_TOP_KNOWN = {
    "model",
    "messages",
    "max_tokens",
    "max_completion_tokens",
    "stop",
    "temperature",
    "top_p",
    "user",
    "stream",
    "stream_options",  # Anthropic streams always carry usage
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "response_format",
    "reasoning_effort",
    "reasoning",
    "thinking",
}
_CHAT_CHANGES = ("web_search_options", "audio", "functions", "function_call")
_CHAT_TOP_ALL = frozenset(_CHAT_TOP_KNOWN | set(_CHAT_CHANGES) | {"n", "modalities"})


def chat_losses(w: _Walk, body: dict[str, Any]) -> None:
    for key in _CHAT_CHANGES:
        if body.get(key):
            w.lose(key, True, why="no Anthropic equivalent")
    n = body.get("n")
    if n not in (None, 1):
        w.lose("n", True, why="an Anthropic route answers once")
    modalities = body.get("modalities")
    if isinstance(modalities, list) and any(m != "text" for m in modalities):
        w.lose("modalities", True)
    w.extra(body, "", _CHAT_TOP_ALL)
    stop = body.get("stop")
    stops = [stop] if isinstance(stop, str) else stop if isinstance(stop, list) else []
    for s in stops:
        if not (isinstance(s, str) and s.strip()):
            w.lose("stop", False, why="Anthropic refuses whitespace-only stop sequences")
            break
    reasoning = body.get("reasoning")
    if isinstance(reasoning, dict):
        w.extra(reasoning, "reasoning", ("effort",))
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") != "text":
        spec = fmt.get("json_schema") if fmt.get("type") == "json_schema" else None
        if not (isinstance(spec, dict) and isinstance(spec.get("schema"), dict)):
            w.lose("response_format", False, why="JSON mode: the prompt asks for JSON")
        else:  # an Anthropic route gets the schema only (output_config.format)
            w.extra(spec, "response_format.json_schema", ("schema",))
    carried = 0
    for k, tool in enumerate(body.get("tools") or []):
        at = f"tools[{k}]"
        if isinstance(tool, dict) and tool.get("type", "function") == "function":
            carried += 1
            w.extra(tool, at, ("type", "function"))
            fn = tool.get("function")
            if isinstance(fn, dict):
                w.extra(fn, f"{at}.function", ("name", "parameters", "description"))
        else:
            kind = tool.get("type") if isinstance(tool, dict) else None
            w.lose(at, True, f"tools[{kind}]", why="no Anthropic equivalent", offered=True)
    if not carried:
        for key in ("tool_choice", "parallel_tool_calls"):
            if key in body:
                w.lose(key, False, why="no tool is carried")
    elif body.get("parallel_tool_calls") is False and body.get("tool_choice") == "none":
        w.lose("parallel_tool_calls", False)
    for i, msg in enumerate(body.get("messages") or []):
        if not plain_message(msg):
            _chat_message(w, msg, f"messages[{i}]")


def _chat_message(w: _Walk, msg: dict[str, Any], at: str) -> None:
    role = msg.get("role")
    content = msg.get("content")
    if role in ("system", "developer", "user"):
        w.extra(msg, at, ("role", "content"))
        if isinstance(content, list):
            _chat_parts(w, content, at, text_only=role != "user")
    elif role == "assistant":
        w.extra(msg, at, ("role", "content", "tool_calls", "thinking_blocks", "reasoning_content"))
        if isinstance(content, list):
            _chat_parts(w, content, at, text_only=True)
        side = [b for b in msg.get("thinking_blocks") or [] if isinstance(b, dict)]
        for j, tb in enumerate(side):
            if not (tb.get("type") == "thinking" and tb.get("signature")) and not (
                tb.get("type") == "redacted_thinking" and tb.get("data")
            ):
                w.lose(f"{at}.thinking_blocks[{j}]", False, why="unsigned reasoning")
        # The thinking goes as the signed blocks' own text; reasoning_content is carried only as that.
        signed = "".join(
            tb.get("thinking") or "" for tb in side if tb.get("type") == "thinking" and tb.get("signature")
        )
        if _text(msg.get("reasoning_content")) and msg["reasoning_content"] != signed:
            w.lose(f"{at}.reasoning_content", False, why="Anthropic refuses thinking without a signature")
        for k, tc in enumerate(msg.get("tool_calls") or []):
            if isinstance(tc, dict):
                w.extra(tc, f"{at}.tool_calls[{k}]", ("id", "type", "function"))
    elif role in ("tool", "function"):
        w.extra(msg, at, ("role", "content", "tool_call_id", "name"))
        if _text(msg.get("tool_call_id")) and "name" in msg:
            w.lose(f"{at}.name", False)
        if isinstance(content, list):
            _chat_parts(w, content, at, text_only=False)
    else:
        w.lose(f"{at}.role", True, why=f"role {role!r} cannot be translated")


def _chat_parts(w: _Walk, parts: list[Any], at: str, *, text_only: bool) -> None:
    for j, part in enumerate(parts):
        where = f"{at}.content[{j}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("text", "input_text", "refusal"):
            w.extra(part, where, ("type", "text", "refusal", "cache_control"))
        elif kind == "image_url" and not text_only:
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, dict) else image
            w.extra(part, where, ("type", "image_url"))
            if isinstance(image, dict):
                w.extra(image, f"{where}.image_url", ("url",))
            if not (
                isinstance(url, str) and (url.startswith(("http://", "https://")) or ";base64," in url[:200])
            ):
                w.lose(where, True, why="an Anthropic route takes base64 data: or http(s) images only")
        elif kind == "file" and not text_only:
            file = part.get("file")
            data = file.get("file_data") if isinstance(file, dict) else None
            w.extra(part, where, ("type", "file"))
            if not (isinstance(data, str) and data.startswith("data:")):
                w.lose(where, True, why="an Anthropic route takes inline data: files only")
            else:
                w.extra(file, f"{where}.file", ("file_data",))  # type: ignore[arg-type]
        else:
            w.lose(where, True, why=f"content part type {kind!r} cannot be translated")
