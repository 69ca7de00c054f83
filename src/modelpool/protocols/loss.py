"""What a translation leaves out, field by field (SPEC §1.6: translation never loses silently).

`translation_losses(ingress, body, target)` walks a client body the way the request translators do
(`translate_responses`, `request_from_anthropic`, `translate_request`) and names every field, tool,
item or content block that has no equivalent in the translated body. Each `Loss` says whether losing it
would change the answer (`changes_answer`): server-side tools, another provider's encrypted reasoning,
server-tool history, citations the route cannot produce, state held by another server, and anything the
translator refuses outright (a content type the target cannot take). Everything else — sampling knobs,
cache hints, metadata, context management, signatures a route cannot verify, unknown fields — is
harmless and only reported (`x-modelpool-dropped`). The property test in tests/protocols holds the two in
step: whatever the translator does not carry, this module names.

`translation_target(ingress, endpoint)` is the one rule for which dialect a route is spoken to;
`reply_drops(obj, upstream, client)` names what a non-stream reply carries that the client's dialect
cannot express (the stream decoders record the same in `StreamEnd.dropped`).

Runs only for a call whose pool has a route that must translate, once per (call, target): the planner
memoises it on the call (`routing.lossy.call_losses`). Not on the per-chunk path.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from modelpool.protocols.translate_reasoning import open_sealed

__all__ = [
    "Loss",
    "blocking",
    "demotion_reason",
    "dropped_header",
    "refusal_message",
    "reply_drops",
    "translation_losses",
    "translation_target",
]


@dataclass(frozen=True, slots=True)
class Loss:
    field: str  # the name a client recognises: "tools[web_search]", "top_k", "input[3].encrypted_content"
    changes_answer: bool
    at: str  # where it is in the client body ("tools[2]"); equal to `field` except for named tools
    why: str = ""


class _Speaks(Protocol):
    def speaks(self, dialect: str) -> bool: ...


# Which dialect a translating route is spoken to, by client dialect, in order of preference.
_TARGETS = {"responses": ("openai", "anthropic"), "anthropic": ("openai",), "openai": ("anthropic",)}
_TARGET_NAME = {"openai": "chat", "anthropic": "anthropic", "responses": "responses"}


def translation_target(ingress: str, endpoint: _Speaks) -> str | None:
    """The dialect an attempt on `endpoint` speaks for a client in `ingress`: the client's own when the
    route speaks it (native), else the first translation the route can take; None when it can take none."""
    if endpoint.speaks(ingress):
        return ingress
    for target in _TARGETS.get(ingress, ()):
        if endpoint.speaks(target):
            return target
    return None


def translation_losses(ingress: str, body: dict[str, Any], target: str) -> list[Loss]:
    """Every part of `body` (a checked client request in `ingress`) the translation to `target` drops."""
    if ingress == target:
        return []
    w = _Walk()
    try:
        if ingress == "responses" and target in ("openai", "anthropic"):
            _responses(w, body, target)
        elif ingress == "anthropic" and target == "openai":
            _anthropic(w, body)
        elif ingress == "openai" and target == "anthropic":
            _chat(w, body)
        else:
            raise ValueError(f"no translation from {ingress} to {target}")
    except (AttributeError, TypeError, KeyError, IndexError):
        # A shape the translator would refuse as a whole (it raises a 400 for it): nothing is carried.
        w.lose("body", True, why="malformed for translation")
    return w.losses


def blocking(losses: Iterable[Loss]) -> list[Loss]:
    """The losses that would change the answer."""
    return [loss for loss in losses if loss.changes_answer]


def _names(losses: Iterable[Loss]) -> list[str]:
    return list(dict.fromkeys(loss.field for loss in losses))


def dropped_header(losses: Iterable[Loss]) -> str:
    """`x-modelpool-dropped` / metadata `dropped`: every loss, changes_answer or not, in body order."""
    return ", ".join(_names(losses))


def demotion_reason(losses: Iterable[Loss], target: str) -> str | None:
    """The planner's reason to move a route to the back, or None when nothing that matters is lost."""
    names = _names(blocking(losses))
    if not names:
        return None
    return f"demoted: would drop {', '.join(names)} when translating to {_TARGET_NAME.get(target, target)}"


def refusal_message(losses: Iterable[Loss], target: str) -> str | None:
    """The 400 message of an attempt refused under `pool.lossy_translation: refuse`, or None."""
    names = _names(blocking(losses))
    if not names:
        return None
    return (
        f"this route must translate the request to {_TARGET_NAME.get(target, target)}, which cannot carry "
        f"{', '.join(names)}; use a route that speaks the request's API, or set "
        f"pool.lossy_translation: allow to send it without them"
    )


class _Walk:
    __slots__ = ("losses",)

    def __init__(self) -> None:
        self.losses: list[Loss] = []

    def lose(self, at: str, changes: bool, name: str | None = None, why: str = "") -> None:
        self.losses.append(Loss(name or at, changes, at, why))

    def extra(self, obj: dict[str, Any], where: str, known: Iterable[str]) -> None:
        """Keys of `obj` the translator does not read: harmless, but named."""
        known = set(known)
        for key in obj:
            if key not in known:
                self.lose(f"{where}.{key}" if where else key, False, why="no equivalent")


def _text(v: Any) -> bool:
    return isinstance(v, str) and v != ""


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
_HOSTED = "needs the provider's own servers"


def _responses(w: _Walk, body: dict[str, Any], target: str) -> None:
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
        else:
            w.lose(at, True, f"tools[{tool.get('name') or kind}]", why=_HOSTED)
    return carried


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
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            pending.clear()
            known = {"function_call": ("call_id", "name", "arguments")}.get(kind)
            if kind == "custom_tool_call":
                known = ("call_id", "name", "input")
            elif kind == "local_shell_call":
                known = ("call_id", "action")
                action = item.get("action")
                if isinstance(action, dict):
                    fields = ("type", "command", "working_directory", "timeout_ms", "env", "user")
                    w.extra(action, f"{at}.action", fields)
            w.extra(item, at, (*_ITEM_BOOKKEEPING, *(known or ())))
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
    if anth and sealed is None:
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
_SERVER_HISTORY = "server-side tool turn"


def _anthropic(w: _Walk, body: dict[str, Any]) -> None:
    if body.get("mcp_servers"):
        w.lose("mcp_servers", True, why=_HOSTED)
    w.extra(body, "", _ANTH_TOP_KNOWN | {"mcp_servers"})
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
            w.lose(at, True, f"tools[{name}]", why=_HOSTED)
    choice = body.get("tool_choice")
    if choice is not None:
        if not carried or not isinstance(choice, dict):
            w.lose("tool_choice", False, why="no tool is carried")
        else:
            w.extra(choice, "tool_choice", ("type", "name", "disable_parallel_tool_use"))
            if choice.get("type") not in ("tool", "auto", "any", "none"):
                w.lose("tool_choice.type", False)
    for i, msg in enumerate(body.get("messages") or []):
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


def _chat(w: _Walk, body: dict[str, Any]) -> None:
    for key in _CHAT_CHANGES:
        if body.get(key):
            w.lose(key, True, why="no Anthropic equivalent")
    n = body.get("n")
    if n not in (None, 1):
        w.lose("n", True, why="an Anthropic route answers once")
    modalities = body.get("modalities")
    if isinstance(modalities, list) and any(m != "text" for m in modalities):
        w.lose("modalities", True)
    w.extra(body, "", _CHAT_TOP_KNOWN | set(_CHAT_CHANGES) | {"n", "modalities"})
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
            w.lose(at, True, f"tools[{kind}]", why="no Anthropic equivalent")
    if not carried:
        for key in ("tool_choice", "parallel_tool_calls"):
            if key in body:
                w.lose(key, False, why="no tool is carried")
    elif body.get("parallel_tool_calls") is False and body.get("tool_choice") == "none":
        w.lose("parallel_tool_calls", False)
    for i, msg in enumerate(body.get("messages") or []):
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
        signed = any(tb.get("type") == "thinking" and tb.get("signature") for tb in side)
        if _text(msg.get("reasoning_content")) and not signed:
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


# ---------------------------------------------------------------- replies


_ANTH_REPLY_BLOCKS = ("text", "thinking", "redacted_thinking", "tool_use")


def reply_drops(obj: Any, upstream: str, client: str) -> list[str]:
    """What a non-stream upstream reply carries that the client's dialect (after translation) cannot
    express: server-tool blocks and citations from Anthropic, annotations and audio from chat."""
    if upstream == client or not isinstance(obj, dict):
        return []
    out: list[str] = []
    if upstream == "anthropic":
        for b in obj.get("content") or []:
            kind = b.get("type") if isinstance(b, dict) else None
            if kind not in _ANTH_REPLY_BLOCKS:
                out.append(str(kind))
            elif kind == "text" and b.get("citations"):
                out.append("citations")
    else:
        choices = obj.get("choices") or [{}]
        msg = (choices[0] or {}).get("message") or {} if isinstance(choices[0], dict) else {}
        for key in ("annotations", "audio"):
            if msg.get(key):
                out.append(key)
        if len(choices) > 1:
            out.append("choices[1:]")
    return list(dict.fromkeys(out))
