"""A Gemini request as a Chat Completions body: the hub of every Gemini translation (SPEC §1.6).

Messages routes get the chat body through `translate_request.openai_to_anthropic` (`translate_any`), so
one walk of the Gemini body serves both. What this leaves out is named by `losses.gemini_losses`.

Function-call ids: a `functionCall.id` is kept as the tool call's id. Gemini CLI echoes ids in history
rewritten as `<name>__<id>`; the prefix is taken off so the id the route gave comes back to it. A call
without an id gets one from its place in the conversation (`gc_<content>_<part>`), and a
`functionResponse` without an id answers the first open call of its name: parallel calls of one
function never share an id.
"""

from __future__ import annotations

from typing import Any

import orjson

from modelpool.protocols.gemini.wire import _pick, parts_of
from modelpool.protocols.mapping import client_shape_errors

# Tools that run on Google's servers: no route reached by translation can run them.
HOSTED_TOOLS = (
    "googleSearch",
    "googleSearchRetrieval",
    "codeExecution",
    "urlContext",
    "fileSearch",
    "googleMaps",
    "computerUse",
    "enterpriseWebSearch",
    "retrieval",
)
SIGNATURE_PLACEHOLDER = "skip_thought_signature_validator"  # Gemini CLI's, on calls that lack one
_MODES = {"AUTO": "auto", "ANY": "required", "NONE": "none", "VALIDATED": "required"}
# generationConfig → chat, same meaning.
_CONFIG = {
    "temperature": "temperature",
    "topP": "top_p",
    "maxOutputTokens": "max_tokens",
    "seed": "seed",
    "presencePenalty": "presence_penalty",
    "frequencyPenalty": "frequency_penalty",
    "candidateCount": "n",
}


def plain_id(call_id: Any, name: Any) -> str | None:
    """The id a route gave, from what the client echoes (`<name>__<id>` is Gemini CLI's rewrite)."""
    if not isinstance(call_id, str) or not call_id:
        return None
    prefix = f"{name}__" if isinstance(name, str) else None
    if prefix and call_id.startswith(prefix) and len(call_id) > len(prefix):
        return call_id[len(prefix) :]
    return call_id


@client_shape_errors
def gemini_to_openai(body: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"model": body.get("model", "")}
    messages: list[dict[str, Any]] = []
    system = _pick(body, "systemInstruction")
    if system is not None:
        text = "\n\n".join(p["text"] for p in parts_of(system) if isinstance(p.get("text"), str))
        if text:
            messages.append({"role": "system", "content": text})
    open_calls: list[tuple[str, str]] = []  # (name, id) of calls not yet answered
    for i, content in enumerate(body.get("contents") or []):
        if content.get("role") == "model":
            messages.append(_assistant(i, parts_of(content), open_calls))
        else:
            messages.extend(_user(parts_of(content), open_calls))
    out["messages"] = messages
    tools = _tools(body.get("tools"))
    if tools:
        out["tools"] = tools
        choice = _tool_choice(_pick(body, "toolConfig"))
        if choice is not None:
            out["tool_choice"] = choice
    _config(_pick(body, "generationConfig"), out)
    return out


def _assistant(i: int, parts: list[dict[str, Any]], open_calls: list[tuple[str, str]]) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant"}
    texts: list[str] = []
    thoughts: list[str] = []
    calls: list[dict[str, Any]] = []
    for j, part in enumerate(parts):
        call = _pick(part, "functionCall")
        if isinstance(call, dict):
            name = call.get("name") or ""
            call_id = plain_id(call.get("id"), name) or f"gc_{i}_{j}"
            open_calls.append((name, call_id))
            args = call.get("args")
            calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": orjson.dumps(args or {}).decode()},
                }
            )
        elif isinstance(part.get("text"), str):
            (thoughts if part.get("thought") else texts).append(part["text"])
    msg["content"] = "".join(texts) if texts else None
    if thoughts:
        msg["reasoning_content"] = "".join(thoughts)
    if calls:
        msg["tool_calls"] = calls
    return msg


def _user(parts: list[dict[str, Any]], open_calls: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """Function responses become tool messages (first, as chat wants them right after the calls);
    text and images the user message."""
    tools: list[dict[str, Any]] = []
    content: list[dict[str, Any]] = []
    for part in parts:
        resp = _pick(part, "functionResponse")
        if isinstance(resp, dict):
            tools.append(_tool_message(resp, open_calls))
        elif isinstance(part.get("text"), str) and not part.get("thought"):
            content.append({"type": "text", "text": part["text"]})
        else:
            data = _pick(part, "inlineData")
            mime = str(_pick(data, "mimeType") or "") if isinstance(data, dict) else ""
            if isinstance(data, dict) and mime.startswith("image/"):
                url = f"data:{mime};base64,{data.get('data') or ''}"
                content.append({"type": "image_url", "image_url": {"url": url}})
    out = tools
    if content:
        # One text part is a plain string; several stay separate parts (Gemini CLI sends its context block
        # and the prompt as two: glued together they would read as one run-on text).
        if len(content) == 1 and content[0]["type"] == "text":
            out.append({"role": "user", "content": content[0]["text"]})
        else:
            out.append({"role": "user", "content": content})
    return out


def _tool_message(resp: dict[str, Any], open_calls: list[tuple[str, str]]) -> dict[str, Any]:
    name = resp.get("name") or ""
    call_id = plain_id(resp.get("id"), name)
    if call_id is None:
        call_id = next((cid for n, cid in open_calls if n == name), f"gc_{name}")
    open_calls[:] = [c for c in open_calls if c[1] != call_id]
    response = resp.get("response")
    text = orjson.dumps(response if response is not None else {}).decode()
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def _tools(raw: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for tool in raw or []:
        for decl in _pick(tool, "functionDeclarations") or []:
            fn: dict[str, Any] = {"name": decl.get("name") or ""}
            if isinstance(decl.get("description"), str):
                fn["description"] = decl["description"]
            schema = _pick(decl, "parametersJsonSchema")
            if schema is None and decl.get("parameters") is not None:
                schema = openapi_to_json_schema(decl["parameters"])
            fn["parameters"] = schema if isinstance(schema, dict) else {"type": "object", "properties": {}}
            out.append({"type": "function", "function": fn})
    return out


def openapi_to_json_schema(schema: Any) -> Any:
    """Gemini's `parameters` (an OpenAPI 3.0 Schema subset: upper-case types, `nullable`) as JSON Schema."""
    if isinstance(schema, list):
        return [openapi_to_json_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            out["type"] = value.lower()
        elif key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            out[key] = {k: openapi_to_json_schema(v) for k, v in value.items()}
        elif key in ("items", "anyOf", "oneOf", "allOf", "not", "additionalProperties"):
            out[key] = openapi_to_json_schema(value)
        elif key == "propertyOrdering":
            continue  # Gemini's own ordering hint; JSON Schema has none
        else:
            out[key] = value
    if out.pop("nullable", False) is True and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    return out


def _tool_choice(config: Any) -> Any:
    fcc = _pick(config, "functionCallingConfig") if isinstance(config, dict) else None
    if not isinstance(fcc, dict):
        return None
    mode = _MODES.get(str(fcc.get("mode") or "AUTO").upper())
    allowed = _pick(fcc, "allowedFunctionNames")
    if mode == "required" and isinstance(allowed, list) and len(allowed) == 1:
        return {"type": "function", "function": {"name": allowed[0]}}
    return mode


def _config(config: Any, out: dict[str, Any]) -> None:
    if not isinstance(config, dict):
        return
    for key, target in _CONFIG.items():
        value = _pick(config, key)
        if value is not None:
            out[target] = value
    stops = _pick(config, "stopSequences")
    if stops:
        out["stop"] = stops
    schema = _pick(config, "responseJsonSchema")
    if schema is None and _pick(config, "responseSchema") is not None:
        schema = openapi_to_json_schema(_pick(config, "responseSchema"))
    if isinstance(schema, dict):
        out["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "response", "schema": schema},
        }
    elif _pick(config, "responseMimeType") == "application/json":
        out["response_format"] = {"type": "json_object"}
