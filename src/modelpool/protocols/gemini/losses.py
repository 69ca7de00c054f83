"""What `to_chat.gemini_to_openai` (and so every Gemini translation) leaves out, named (SPEC §1.6).

Harmless and reported: `topK`, safety settings, labels, thought signatures (a route reached by
translation cannot verify them, Gemini CLI's placeholder included), unknown keys. Hosted tools
(`googleSearch`, `codeExecution`, …) are left out of the request — the model simply lacks them, as on a
provider that never had them (§1.6 "What a client only offers is not what it says") — and named.
Changes the answer: content the route cannot read (non-image inline data, `fileData` URIs, executable
code and its results in history) and `cachedContent` (a cache held by Google's servers).
"""

from __future__ import annotations

from typing import Any

from modelpool.protocols.gemini.to_chat import _CONFIG, HOSTED_TOOLS
from modelpool.protocols.gemini.wire import _pick, parts_of
from modelpool.protocols.loss_walk import HOSTED, Walk

_TOP = frozenset(
    {"model", "stream", "contents", "systemInstruction", "system_instruction", "tools", "toolConfig"}
    | {"tool_config", "generationConfig", "generation_config"}
)
_CONFIG_KEYS = frozenset(
    {*_CONFIG, "stopSequences", "responseJsonSchema", "responseSchema", "responseMimeType", "thinkingConfig"}
)


def _snake(camel: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in camel)


def _both(keys: frozenset[str] | set[str]) -> frozenset[str]:
    return frozenset(keys | {_snake(k) for k in keys})


_CONFIG_BOTH = _both(set(_CONFIG_KEYS))
_THINKING = _both({"includeThoughts", "thinkingBudget", "thinkingLevel"})
_DECL = _both({"name", "description", "parameters", "parametersJsonSchema"})
_CALL = frozenset({"id", "name", "args"})
_RESPONSE = frozenset({"id", "name", "response"})
_INLINE = _both({"mimeType", "data"})


# Chat knobs a Messages route has no field for (the chat→Anthropic step leaves them out).
_NOT_ANTHROPIC = ("seed", "presencePenalty", "frequencyPenalty")


def gemini_losses(w: Walk, body: dict[str, Any], target: str = "openai") -> None:
    if _pick(body, "cachedContent"):
        w.lose("cachedContent", True, why="a cache held by Google's servers")
    for key in body:
        if key not in _TOP and key not in ("cachedContent", "cached_content"):
            w.lose(key, False, why="no equivalent")
    system = _pick(body, "systemInstruction")
    if isinstance(system, dict):
        for j, part in enumerate(parts_of(system)):
            if not isinstance(part.get("text"), str):
                w.lose(f"systemInstruction.parts[{j}]", False, why="only text goes into the system message")
    called: set[str] = set()  # names of the calls so far: a response's name is the call's
    for i, content in enumerate(body.get("contents") or []):
        _content(w, i, content, called, target)
    for k, tool in enumerate(body.get("tools") or []):
        _tool(w, k, tool)
    config = _pick(body, "generationConfig")
    if isinstance(config, dict):
        where = "generationConfig"
        w.extra(config, where, _CONFIG_BOTH)
        if target == "anthropic":
            for key in _NOT_ANTHROPIC:
                if _pick(config, key) is not None:
                    w.lose(f"{where}.{key}", False, key, why="no Anthropic equivalent")
            count = _pick(config, "candidateCount")
            if count not in (None, 1):
                w.lose(
                    f"{where}.candidateCount", True, "candidateCount", why="an Anthropic route answers once"
                )
        thinking = _pick(config, "thinkingConfig")
        if isinstance(thinking, dict):
            w.extra(thinking, f"{where}.thinkingConfig", _THINKING)
    tool_config = _pick(body, "toolConfig")
    if isinstance(tool_config, dict):
        w.extra(tool_config, "toolConfig", _both({"functionCallingConfig"}))
        fcc = _pick(tool_config, "functionCallingConfig")
        if isinstance(fcc, dict):
            w.extra(fcc, "toolConfig.functionCallingConfig", _both({"mode", "allowedFunctionNames"}))


def _content(w: Walk, i: int, content: dict[str, Any], called: set[str], target: str) -> None:
    model = content.get("role") == "model"
    w.extra(content, f"contents[{i}]", ("role", "parts"))
    for j, part in enumerate(parts_of(content)):
        at = f"contents[{i}].parts[{j}]"
        sig = _pick(part, "thoughtSignature")
        if sig:
            w.lose(f"{at}.thoughtSignature", False, "thoughtSignature", why="only Gemini can verify it")
        call = _pick(part, "functionCall")
        resp = _pick(part, "functionResponse")
        data = _pick(part, "inlineData")
        if isinstance(call, dict):
            called.add(str(call.get("name")))
            w.extra(call, f"{at}.functionCall", _CALL)
            known: tuple[str, ...] = (
                "functionCall",
                "function_call",
                "thoughtSignature",
                "thought_signature",
            )
        elif isinstance(resp, dict):
            w.extra(resp, f"{at}.functionResponse", _RESPONSE)
            if str(resp.get("name")) not in called:  # a tool message names its call by id only
                w.lose(
                    f"{at}.functionResponse.name", False, "name", why="answers no call in the conversation"
                )
            known = ("functionResponse", "function_response", "thoughtSignature", "thought_signature")
        elif isinstance(part.get("text"), str):
            if part.get("thought") and (not model or target == "anthropic"):
                why = (
                    "a thought in a user turn"
                    if not model
                    else "Anthropic takes back only its own signed thinking"
                )
                w.lose(at, False, why=why)
                continue
            known = ("text", "thought", "thoughtSignature", "thought_signature")
        elif isinstance(data, dict) and str(_pick(data, "mimeType") or "").startswith("image/") and not model:
            w.extra(data, f"{at}.inlineData", _INLINE)
            known = ("inlineData", "inline_data", "thoughtSignature", "thought_signature")
        else:
            kind = next(iter(part), "part")
            w.lose(at, True, why=f"a {kind} part has no equivalent")
            continue
        w.extra(part, at, known)


def _tool(w: Walk, k: int, tool: dict[str, Any]) -> None:
    at = f"tools[{k}]"
    for key in tool:
        if key in ("functionDeclarations", "function_declarations"):
            for d, decl in enumerate(tool[key] or []):
                if isinstance(decl, dict):
                    w.extra(decl, f"{at}.functionDeclarations[{d}]", _DECL)
        elif key in HOSTED_TOOLS or _camel(key) in HOSTED_TOOLS:
            w.lose(f"{at}.{key}", True, _camel(key), why=HOSTED + "; left out", offered=True)
        else:
            w.lose(f"{at}.{key}", False, why="no equivalent")


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(r[:1].upper() + r[1:] for r in rest)


def gemini_reply_drops(obj: dict[str, Any]) -> list[str]:
    """What a non-stream Gemini reply carries that another dialect cannot express — the names the stream
    decoder (`decode.GeminiDecoder`) gives the same parts: a `thoughtSignature` (only Gemini can verify
    it), code execution parts."""
    out: list[str] = []
    candidates = obj.get("candidates")
    cand = candidates[0] if isinstance(candidates, list) and candidates else None
    for part in parts_of(cand.get("content")) if isinstance(cand, dict) else []:
        if _pick(part, "thoughtSignature"):
            out.append("thoughtSignature")
        for name in ("executableCode", "codeExecutionResult"):
            if _pick(part, name):
                out.append(name)
    return list(dict.fromkeys(out))


# ---------------------------------------------------------------- chat → Gemini (from_chat.py)

_CHAT_CARRIED = frozenset(
    {"model", "messages", "stream", "stream_options", "temperature", "top_p", "max_tokens", "seed"}
    | {"max_completion_tokens", "presence_penalty", "frequency_penalty", "n", "stop", "response_format"}
    | {"tools", "tool_choice", "reasoning_effort", "reasoning", "thinking"}
)
_CHAT_CHANGES = ("web_search_options", "audio", "functions", "function_call")
_USER_PARTS = {"text": ("type", "text"), "image_url": ("type", "image_url"), "file": ("type", "file")}


def chat_to_gemini_losses(w: Walk, body: dict[str, Any]) -> None:
    for key in _CHAT_CHANGES:
        if body.get(key):
            w.lose(key, True, why="no Gemini equivalent")
    modalities = body.get("modalities")
    if isinstance(modalities, list) and any(m != "text" for m in modalities):
        w.lose("modalities", True)
    for key in body:
        if key not in _CHAT_CARRIED and key not in _CHAT_CHANGES and key != "modalities":
            w.lose(key, False, why="no Gemini equivalent")
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and isinstance(fmt.get("json_schema"), dict):
        w.extra(fmt["json_schema"], "response_format.json_schema", ("schema",))
    for i, msg in enumerate(body.get("messages") or []):
        _chat_message(w, i, msg)
    for k, tool in enumerate(body.get("tools") or []):
        at = f"tools[{k}]"
        if tool.get("type", "function") != "function":
            w.lose(at, True, tool.get("type"), why="only function tools reach a Gemini route")
            continue
        w.extra(tool, at, ("type", "function"))
        w.extra(tool.get("function") or {}, f"{at}.function", ("name", "description", "parameters"))


def _chat_message(w: Walk, i: int, msg: dict[str, Any]) -> None:
    at = f"messages[{i}]"
    role = msg.get("role")
    known = {
        "assistant": ("role", "content", "tool_calls", "reasoning_content", "reasoning"),
        "tool": ("role", "content", "tool_call_id", "name"),
        "function": ("role", "content", "tool_call_id", "name"),
    }.get(str(role), ("role", "content"))
    w.extra(msg, at, known)
    content = msg.get("content")
    if isinstance(content, list):
        for j, part in enumerate(content):
            kind = part.get("type") if isinstance(part, dict) else None
            where = f"{at}.content[{j}]"
            if kind == "text" or (kind in _USER_PARTS and role not in ("system", "developer", "assistant")):
                w.extra(part, where, _USER_PARTS[kind])
                file = part.get("file") if kind == "file" else None
                if isinstance(file, dict):
                    if not file.get("file_data"):
                        w.lose(where, True, why="a file by id is held by another server")
                    w.extra(file, f"{where}.file", ("file_data",))
                image = part.get("image_url") if kind == "image_url" else None
                if isinstance(image, dict):
                    w.extra(image, f"{where}.image_url", ("url",))
            else:
                w.lose(where, True, why=f"a {kind} part has no Gemini equivalent here")
    for k, tc in enumerate(msg.get("tool_calls") or []):
        where = f"{at}.tool_calls[{k}]"
        if tc.get("type", "function") != "function":
            w.lose(where, True, why="only function calls reach a Gemini route")
            continue
        w.extra(tc, where, ("id", "type", "function"))
        w.extra(tc.get("function") or {}, f"{where}.function", ("name", "arguments"))


# ---------------------------------------------------------------- Messages / Responses → chat → Gemini


def through_chat_losses(w: Walk, ingress: str, body: dict[str, Any]) -> None:
    """The fields of a Messages or Responses body that the chat body carries and a Gemini request does not
    (the chat→Gemini step's losses, named where the client wrote them)."""
    if ingress == "anthropic":
        meta = body.get("metadata")
        if isinstance(meta, dict) and isinstance(meta.get("user_id"), str):
            w.lose("metadata.user_id", False, why="no Gemini equivalent")
        choice = body.get("tool_choice")
        if isinstance(choice, dict) and choice.get("disable_parallel_tool_use") and body.get("tools"):
            w.lose("tool_choice.disable_parallel_tool_use", False, why="no Gemini equivalent")
        for i, msg in enumerate(body.get("messages") or []):
            content = msg.get("content") if isinstance(msg, dict) else None
            for j, block in enumerate(content if isinstance(content, list) else []):
                if isinstance(block, dict) and block.get("type") == "document" and block.get("title"):
                    w.lose(f"messages[{i}].content[{j}].title", False, why="no Gemini equivalent")
        return
    for key in ("user", "safety_identifier", "parallel_tool_calls", "prompt_cache_key"):
        if body.get(key) is not None:
            w.lose(key, False, why="no Gemini equivalent")
    text = body.get("text")
    fmt = text.get("format") if isinstance(text, dict) else None
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        for key in ("name", "strict", "description"):
            if key in fmt:
                w.lose(f"text.format.{key}", False, key, why="a Gemini response schema has no such field")
    for k, tool in enumerate(body.get("tools") or []):
        if isinstance(tool, dict) and tool.get("type") == "function" and "strict" in tool:
            w.lose(f"tools[{k}].strict", False, "strict", why="no Gemini equivalent")
    inp = body.get("input")
    for i, item in enumerate(inp if isinstance(inp, list) else []):
        if not isinstance(item, dict):
            continue
        if item.get("type") == "reasoning" and item.get("encrypted_content"):
            w.lose(f"input[{i}].encrypted_content", False, why="only its own reasoning reaches Gemini")
        content = item.get("content")
        system = item.get("role") in ("system", "developer")
        for j, part in enumerate(content if isinstance(content, list) else []):
            if (
                system
                and isinstance(part, dict)
                and part.get("type") not in ("input_text", "output_text", "text")
            ):
                w.lose(f"input[{i}].content[{j}]", True, why="systemInstruction takes text only")
                continue
            if isinstance(part, dict) and part.get("type") == "input_image" and part.get("detail"):
                w.lose(f"input[{i}].content[{j}].detail", False, "detail", why="no Gemini equivalent")
            if isinstance(part, dict) and part.get("type") == "input_file" and part.get("filename"):
                w.lose(f"input[{i}].content[{j}].filename", False, "filename", why="no Gemini equivalent")
