"""A Chat Completions body as a Gemini request: for a route that speaks only the Gemini API (SPEC §1.6).

Messages and Responses clients reach it through the chat body (`translate_any`). Function calls keep
their ids both ways; a call written back into the history carries Gemini CLI's placeholder signature
(`skip_thought_signature_validator`), which Gemini accepts for calls it did not sign itself (another
route's, or a client that kept no signature). What this leaves out is named by `losses.chat_to_gemini_losses`.
"""

from __future__ import annotations

from typing import Any

import orjson

from modelpool.protocols.effort import read_effort
from modelpool.protocols.gemini.to_chat import SIGNATURE_PLACEHOLDER
from modelpool.protocols.mapping import client_shape_errors, parse_arguments

_CONFIG = {
    "temperature": "temperature",
    "top_p": "topP",
    "max_completion_tokens": "maxOutputTokens",
    "max_tokens": "maxOutputTokens",
    "seed": "seed",
    "presence_penalty": "presencePenalty",
    "frequency_penalty": "frequencyPenalty",
    "n": "candidateCount",
}
_MODES = {"auto": "AUTO", "none": "NONE", "required": "ANY"}


@client_shape_errors
def openai_to_gemini(body: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    system: list[str] = []
    contents: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # tool call id → function name (a functionResponse names its function)
    for msg in body.get("messages") or []:
        role = msg.get("role")
        if role in ("system", "developer"):
            system.append(_text(msg.get("content")))
        elif role == "assistant":
            _add(contents, "model", _model_parts(msg, names))
        elif role in ("tool", "function"):
            call_id = msg.get("tool_call_id") or ""
            name = names.get(call_id) or msg.get("name") or ""
            resp = {"id": call_id, "name": name, "response": _response(msg.get("content"))}
            _add(contents, "user", [{"functionResponse": resp}])
        else:
            _add(contents, "user", _user_parts(msg.get("content")))
    if system:
        out["systemInstruction"] = {"parts": [{"text": "\n\n".join(s for s in system if s)}]}
    out["contents"] = contents
    tools = [_declaration(t) for t in body.get("tools") or [] if t.get("type", "function") == "function"]
    if tools:
        out["tools"] = [{"functionDeclarations": tools}]
        choice = _tool_config(body.get("tool_choice"))
        if choice:
            out["toolConfig"] = {"functionCallingConfig": choice}
    config = _generation_config(body)
    if config:
        out["generationConfig"] = config
    return out


def _add(contents: list[dict[str, Any]], role: str, parts: list[dict[str, Any]]) -> None:
    """Consecutive turns of one role become one content (tool results and the user's next words)."""
    if not parts:
        return
    if contents and contents[-1]["role"] == role:
        contents[-1]["parts"].extend(parts)
    else:
        contents.append({"role": role, "parts": parts})


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text") or "" for p in content if isinstance(p, dict))
    return ""


def _user_parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"text": content}] if content else []
    parts: list[dict[str, Any]] = []
    for p in content or []:
        kind = p.get("type")
        if kind == "text":
            parts.append({"text": p.get("text") or ""})
        elif kind == "image_url":
            url = (p.get("image_url") or {}).get("url") or ""
            parts.append(_data_part(url, "image/jpeg"))
        elif kind == "file":
            parts.append(_data_part((p.get("file") or {}).get("file_data") or "", "application/pdf"))
    return parts


def _data_part(url: str, default_mime: str) -> dict[str, Any]:
    """A data URL as inline data; any other URL as a file reference."""
    if url.startswith("data:") and ";base64," in url:
        mime, _, data = url[5:].partition(";base64,")
        return {"inlineData": {"mimeType": mime or default_mime, "data": data}}
    return {"fileData": {"mimeType": default_mime, "fileUri": url}}


def _model_parts(msg: dict[str, Any], names: dict[str, str]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    reasoning = msg.get("reasoning_content") or msg.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        parts.append({"text": reasoning, "thought": True})
    text = _text(msg.get("content"))
    if text:
        parts.append({"text": text})
    for tc in msg.get("tool_calls") or []:
        fn = tc.get("function") or {}
        name = fn.get("name") or ""
        call_id = tc.get("id") or ""
        names[call_id] = name
        call = {"id": call_id, "name": name, "args": parse_arguments(fn.get("arguments"))}
        parts.append({"functionCall": call, "thoughtSignature": SIGNATURE_PLACEHOLDER})
    return parts


def _response(content: Any) -> dict[str, Any]:
    """Gemini wants an object: a tool result that is a JSON object stays one, anything else is `output`."""
    text = _text(content)
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {"output": text}
    return value if isinstance(value, dict) else {"output": text}


def _declaration(tool: dict[str, Any]) -> dict[str, Any]:
    fn = tool.get("function") or {}
    decl: dict[str, Any] = {"name": fn.get("name") or ""}
    if fn.get("description"):
        decl["description"] = fn["description"]
    decl["parametersJsonSchema"] = fn.get("parameters") or {"type": "object", "properties": {}}
    return decl


def _tool_config(choice: Any) -> dict[str, Any] | None:
    if isinstance(choice, str):
        mode = _MODES.get(choice)
        return {"mode": mode} if mode else None
    if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        return {"mode": "ANY", "allowedFunctionNames": [choice["function"].get("name")]}
    return None


def _generation_config(body: dict[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = {}
    for key, target in _CONFIG.items():
        if body.get(key) is not None and target not in config:
            config[target] = body[key]
    stop = body.get("stop")
    if stop:
        config["stopSequences"] = [stop] if isinstance(stop, str) else list(stop)
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") in ("json_object", "json_schema"):
        config["responseMimeType"] = "application/json"
        spec = fmt.get("json_schema")
        if isinstance(spec, dict) and isinstance(spec.get("schema"), dict):
            config["responseJsonSchema"] = spec["schema"]
    effort = read_effort("openai", body)
    if effort is not None and effort != "off":
        config["thinkingConfig"] = {"includeThoughts": True}  # the tier itself: `write_effort`
    return config
