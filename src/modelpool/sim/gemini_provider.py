"""The Gemini API as AI Studio speaks it (`kind: gemini`): requests read into a `CallRequest`, replies as
`GenerateContentResponse` bodies and SSE events, `countTokens` and the model list.

Paths (under `/v1beta`): `models/{m}:generateContent`, `:streamGenerateContent?alt=sse`, `:countTokens`,
`GET models`; the OpenAI-compatible root is `/v1beta/openai` (served by the chat renderer). A function
call goes out whole in one event, as Gemini sends it, with an id.
"""

from __future__ import annotations

import uuid
from typing import Any

import orjson

from modelpool.sim import provenance
from modelpool.sim.errors import SimError, bad_request
from modelpool.sim.gemini_shapes import error_obj, texts
from modelpool.sim.gemini_shapes import pick as _pick
from modelpool.sim.plan import Plan
from modelpool.sim.request import CallRequest, ToolSpec, _int_or_none, _schema
from modelpool.sim.spec import SimProvider
from modelpool.sim.stream import Script

_HOSTED = ("googleSearch", "google_search", "codeExecution", "code_execution", "urlContext", "url_context")
_FINISH = {"stop": "STOP", "length": "MAX_TOKENS", "tool_calls": "STOP"}


def target(path: str) -> tuple[str, str] | None:
    """(model, method) of a `/models/{m}:{method}` path (after `/v1beta`), else None."""
    if not path.startswith("/models/") or ":" not in path:
        return None
    model, _, method = path[len("/models/") :].rpartition(":")
    return (model, method) if model else None


def parse_call(path: str, body: Any) -> tuple[CallRequest, bytes | None]:
    """The call a Gemini path and body make; for `:countTokens` also its answer."""
    model_id, method = target(path[path.index("/models/") :]) or ("", "")
    if method == "countTokens":
        req = parse_gemini(body, model_id, False)
        return req, count_tokens_body(req.prompt_tokens)
    if method not in ("generateContent", "streamGenerateContent"):
        raise SimError(404, f"unknown method {method}", "invalid_request_error", "not_found")
    return parse_gemini(body, model_id, method == "streamGenerateContent"), None


def parse_gemini(body: Any, model: str, stream: bool) -> CallRequest:
    if not isinstance(body, dict):
        raise bad_request("Invalid JSON payload received.")
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        raise bad_request("* GenerateContentRequest.contents: contents is not specified")
    tools = _tools(body.get("tools"))
    config = _schema(_pick(body, "generationConfig"))
    thinking = _schema(_pick(config, "thinkingConfig"))
    budget = _pick(thinking, "thinkingBudget")
    last = contents[-1] if isinstance(contents[-1], dict) else {}
    parts = [p for p in last.get("parts") or [] if isinstance(p, dict)]
    answered = any(_pick(p, "functionResponse") for p in parts)
    fresh_user = last.get("role", "user") == "user" and not answered
    all_texts = texts(body)
    return CallRequest(
        body=body,
        model=model,
        stream=stream,
        include_usage=True,
        max_tokens=_int_or_none(_pick(config, "maxOutputTokens")),
        effort="off" if budget == 0 else None,
        thinking=True if _pick(thinking, "includeThoughts") else None,
        tool_names=[t.name for t in tools if t.kind == "function"],
        tool_turn=bool(tools) and fresh_user,
        has_images=any(_is_image(p) for c in contents if isinstance(c, dict) for p in c.get("parts") or []),
        prompt_tokens=max(1, sum(len(t) for t in all_texts) // 4),
        dialect="gemini",
        tools=tools,
        after_tool_result=answered,
    )


def _is_image(part: Any) -> bool:
    data = _pick(part, "inlineData") if isinstance(part, dict) else None
    return isinstance(data, dict) and str(_pick(data, "mimeType") or "").startswith("image/")


def _tools(raw: Any) -> list[ToolSpec]:
    out: list[ToolSpec] = []
    for tool in raw if isinstance(raw, list) else []:
        if not isinstance(tool, dict):
            continue
        for decl in _pick(tool, "functionDeclarations") or []:
            if isinstance(decl, dict) and isinstance(decl.get("name"), str):
                schema = _pick(decl, "parametersJsonSchema") or decl.get("parameters")
                out.append(ToolSpec(decl["name"], "function", _lower(_schema(schema))))
        out.extend(ToolSpec(key, "server") for key in tool if key in _HOSTED)
    return out


def _lower(schema: dict[str, Any]) -> dict[str, Any]:
    """`parameters` may use OpenAPI's upper-case types; the agent reads `type` of properties."""
    props = schema.get("properties")
    if not isinstance(props, dict):
        return schema
    lowered = {
        k: {**v, "type": v["type"].lower()} if isinstance(v, dict) and isinstance(v.get("type"), str) else v
        for k, v in props.items()
    }
    return {**schema, "properties": lowered}


# ---------------------------------------------------------------- replies


def usage(plan: Plan) -> dict[str, Any]:
    thoughts = len(plan.reasoning)
    answer = plan.completion_tokens - thoughts
    out: dict[str, Any] = {
        "promptTokenCount": plan.prompt_tokens,
        "candidatesTokenCount": answer,
        "totalTokenCount": plan.prompt_tokens + plan.completion_tokens,
    }
    if thoughts:
        out["thoughtsTokenCount"] = thoughts
    if plan.cached_tokens:
        out["cachedContentTokenCount"] = plan.cached_tokens
    return out


def _call_parts(plan: Plan) -> list[dict[str, Any]]:
    """One part per call (parallel calls of one function each have their own id)."""
    args = orjson.loads("".join(plan.tool_fragments) or "{}")
    return [{"functionCall": {"id": i, "name": plan.tool_name, "args": args}} for i in plan.call_ids]


def _event(parts: list[dict[str, Any]], plan: Plan, resp_id: str, final: bool) -> bytes:
    cand: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    obj: dict[str, Any] = {"candidates": [cand]}
    if final:
        cand["finishReason"] = _FINISH.get(plan.finish, "STOP")
        obj["usageMetadata"] = usage(plan)
    else:  # as Gemini streams it: every event says the prompt's size, the last one the whole usage
        obj["usageMetadata"] = {"promptTokenCount": plan.prompt_tokens, "totalTokenCount": plan.prompt_tokens}
    obj |= {"modelVersion": plan.model_id, "responseId": resp_id}
    return b"data: " + orjson.dumps(obj) + b"\r\n\r\n"


def _signed(part: dict[str, Any], plan: Plan) -> dict[str, Any]:
    """A reply that reasoned carries a `thoughtSignature` (Gemini puts it on the call part, or on the
    last part): the sim's seal names the provider, which is what the provenance check reads back."""
    if not plan.reasoning:
        return part
    return {
        **part,
        "thoughtSignature": provenance.seal(plan.provider_id, plan.model_id, "".join(plan.reasoning)),
    }


def stream_script(plan: Plan) -> Script:
    resp_id = uuid.uuid4().hex[:20]
    reasoning = [_event([{"text": t, "thought": True}], plan, resp_id, False) for t in plan.reasoning]
    content = [_event([{"text": t}], plan, resp_id, False) for t in plan.content]
    for i, part in enumerate(_call_parts(plan)):  # the first call carries the signature, as Gemini's
        content.append(_event([_signed(part, plan) if i == 0 else part], plan, resp_id, False))
    last = {"text": ""} if plan.tool_name is not None else _signed({"text": ""}, plan)
    return Script(
        head=b"",
        reasoning=reasoning,
        content=content,
        tail=_event([last], plan, resp_id, True),
        terminator=b"",
        malformed=b'data: {"candidates": [{"content": \r\n\r\n',
        render_error=error_frame,
    )


def body(plan: Plan) -> bytes:
    parts: list[dict[str, Any]] = []
    if plan.reasoning:
        parts.append({"text": "".join(plan.reasoning), "thought": True})
    if plan.content:
        parts.append({"text": "".join(plan.content)})
    calls = _call_parts(plan)
    if parts and plan.reasoning and not calls:
        parts[-1] = _signed(parts[-1], plan)
    if calls and plan.reasoning:
        calls[0] = _signed(calls[0], plan)
    parts += calls
    cand = {
        "content": {"role": "model", "parts": parts},
        "finishReason": _FINISH.get(plan.finish, "STOP"),
        "index": 0,
    }
    obj = {"candidates": [cand], "usageMetadata": usage(plan), "modelVersion": plan.model_id}
    return orjson.dumps(obj | {"responseId": uuid.uuid4().hex[:20]})


def error_frame(err: SimError) -> bytes:
    return b"data: " + orjson.dumps(error_obj(err.status, err.message)) + b"\r\n\r\n"


def count_tokens_body(prompt_tokens: int) -> bytes:
    return orjson.dumps({"totalTokens": prompt_tokens})


def models_body(provider: SimProvider) -> bytes:
    models = [
        {
            "name": f"models/{m.id}",
            "displayName": m.id,
            "inputTokenLimit": m.context_window or 1_048_576,
            "outputTokenLimit": 65_536,
            "supportedGenerationMethods": ["generateContent", "countTokens"],
        }
        for m in provider.models
    ]
    return orjson.dumps({"models": models})
