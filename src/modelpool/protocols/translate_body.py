"""Non-stream bodies: chat.completion ⇄ Anthropic message → Responses response object, and errors.

Both upstream replies are read into one neutral `Reply` (ordered blocks, stop reason, usage) and
rendered in the client's dialect. Not on the per-chunk path: clarity over speed.
"""

from __future__ import annotations

from typing import Any

import orjson

from modelpool.protocols import anthropic as an
from modelpool.protocols import openai_chat
from modelpool.protocols.gemini import wire as gemini_wire
from modelpool.protocols.gemini.reply import reply_from_gemini, to_gemini
from modelpool.protocols.mapping import (
    SIDE_FIELD,
    anthropic_stop,
    dump_arguments,
    new_id,
    now,
    openai_finish,
    parse_arguments,
    usage_from_anthropic,
    usage_from_openai,
    usage_to_anthropic,
    usage_to_openai,
    usage_to_responses,
)
from modelpool.protocols.reply import Reply
from modelpool.protocols.responses import INCOMPLETE_BY_FINISH, response_object
from modelpool.protocols.translate_reasoning import seal_redacted, seal_signature
from modelpool.protocols.translate_tools import client_item, special_tools


class MalformedUpstreamBody(ValueError):
    """A 200 body that is not a reply in the upstream's dialect."""


def reply_from_openai(obj: dict[str, Any]) -> Reply:
    reply = Reply(model=obj.get("model") or "")
    choices = obj.get("choices") or [{}]
    choice = choices[0] if isinstance(choices[0], dict) else {}
    msg = choice.get("message") or {}
    side = [b for b in msg.get(SIDE_FIELD) or [] if isinstance(b, dict)]
    if side:  # signed blocks carry the same text as reasoning_content, plus what Anthropic needs
        for b in side:
            if b.get("type") == "redacted_thinking":
                reply.blocks.append(("redacted", b.get("data") or ""))
            else:
                reply.blocks.append(("thinking", b.get("thinking") or "", b.get("signature")))
    else:
        reasoning = msg.get("reasoning_content") or msg.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            reply.blocks.append(("thinking", reasoning, None))
    if msg.get("content"):
        content = msg["content"]
        if isinstance(content, list):  # some upstreams answer with parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        reply.blocks.append(("text", content))
    if msg.get("refusal"):
        reply.blocks.append(("refusal", msg["refusal"]))
    calls = list(msg.get("tool_calls") or [])
    if isinstance(msg.get("function_call"), dict):
        calls.append({"function": msg["function_call"]})
    for tc in calls:
        fn = tc.get("function") or {}
        args = fn.get("arguments")
        args = args if isinstance(args, str) else dump_arguments(args)
        reply.blocks.append(("tool", tc.get("id") or new_id("call_"), fn.get("name") or "", args))
    reply.finish_reason = choice.get("finish_reason")
    reply.usage = usage_from_openai(obj.get("usage"))
    return reply


def reply_from_anthropic(obj: dict[str, Any]) -> Reply:
    reply = Reply(model=obj.get("model") or "")
    for b in obj.get("content") or []:
        kind = b.get("type") if isinstance(b, dict) else None
        if kind == "text":
            reply.blocks.append(("text", b.get("text", "")))
        elif kind == "thinking":
            reply.blocks.append(("thinking", b.get("thinking", ""), b.get("signature") or None))
        elif kind == "redacted_thinking":
            reply.blocks.append(("redacted", b.get("data", "")))
        elif kind == "tool_use":
            reply.blocks.append(("tool", b.get("id"), b.get("name"), dump_arguments(b.get("input"))))
        # server tool blocks and their results have no client-side equivalent elsewhere
    reply.stop_reason = obj.get("stop_reason")
    reply.stop_sequence = obj.get("stop_sequence")
    reply.usage = usage_from_anthropic(obj.get("usage"))
    return reply


def to_openai(reply: Reply, model: str | None = None, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    texts = [b[1] for b in reply.blocks if b[0] == "text"]
    msg: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
    refusals = [b[1] for b in reply.blocks if b[0] == "refusal"]
    if refusals:
        msg["refusal"] = "".join(refusals)
    thinking = [b for b in reply.blocks if b[0] in ("thinking", "redacted")]
    if thinking:
        msg["reasoning_content"] = "".join(b[1] for b in thinking if b[0] == "thinking")
        if any(b[0] == "redacted" or b[2] for b in thinking):
            msg[SIDE_FIELD] = [
                {"type": "thinking", "thinking": b[1], "signature": b[2]}
                if b[0] == "thinking"
                else {"type": "redacted_thinking", "data": b[1]}
                for b in thinking
            ]
    calls = [
        {"id": b[1], "type": "function", "function": {"name": b[2], "arguments": b[3]}}
        for b in reply.blocks
        if b[0] == "tool"
    ]
    if calls:
        msg["tool_calls"] = calls
    obj: dict[str, Any] = {
        "id": new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": now(),
        "model": model or reply.model,
        "choices": [
            {
                "index": 0,
                "message": msg,
                "logprobs": None,
                "finish_reason": reply.finish_reason or openai_finish(reply.stop_reason),
            }
        ],
    }
    if reply.usage:
        obj["usage"] = usage_to_openai(reply.usage)
    if meta is not None:
        obj["modelpool"] = meta
    return obj


def to_anthropic(
    reply: Reply, model: str | None = None, meta: dict[str, Any] | None = None
) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for b in reply.blocks:
        if b[0] == "thinking":
            content.append({"type": "thinking", "thinking": b[1], "signature": b[2] or ""})
        elif b[0] == "redacted":
            content.append({"type": "redacted_thinking", "data": b[1]})
        elif b[0] in ("text", "refusal"):
            content.append({"type": "text", "text": b[1]})
        else:
            content.append({"type": "tool_use", "id": b[1], "name": b[2], "input": parse_arguments(b[3])})
    usage = usage_to_anthropic(reply.usage) if reply.usage else {"input_tokens": 0, "output_tokens": 0}
    obj: dict[str, Any] = {
        "id": new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model or reply.model,
        "content": content,
        "stop_reason": reply.stop_reason or anthropic_stop(reply.finish_reason),
        "stop_sequence": reply.stop_sequence,
        "usage": usage,
    }
    if meta is not None:
        obj["modelpool"] = meta
    return obj


_ITEM_PREFIX = {"custom": "ctc_", "local_shell": "lsh_", "tool_search": "tsc_"}


def to_responses(
    reply: Reply,
    request: dict[str, Any] | None = None,
    model: str | None = None,
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    special = special_tools(request)
    for b in reply.blocks:
        kind = b[0]
        if kind in ("thinking", "redacted"):
            text = b[1] if kind == "thinking" else ""
            item: dict[str, Any] = {
                "id": new_id("rs_"),
                "type": "reasoning",
                "summary": [],
                "status": "completed",
            }
            item["content"] = [{"type": "reasoning_text", "text": text}]
            if kind == "thinking" and b[2]:
                item["encrypted_content"] = seal_signature(b[2])
            elif kind == "redacted" and b[1]:
                item["encrypted_content"] = seal_redacted(b[1])
            output.append(item)
        elif kind in ("text", "refusal"):
            part = (
                {"type": "output_text", "text": b[1], "annotations": [], "logprobs": []}
                if kind == "text"
                else {"type": "refusal", "refusal": b[1]}
            )
            last = output[-1] if output else None
            if last is not None and last["type"] == "message":
                last["content"].append(part)
            else:
                output.append(
                    {
                        "id": new_id("msg_"),
                        "type": "message",
                        "role": "assistant",
                        "status": "completed",
                        "content": [part],
                    }
                )
        elif b[2] in special:
            item_id = new_id(_ITEM_PREFIX.get(special[b[2]], "fc_"))
            output.append(client_item(special[b[2]], item_id, b[1], b[2], b[3], request))
        else:
            output.append(
                {
                    "id": new_id("fc_"),
                    "type": "function_call",
                    "call_id": b[1],
                    "name": b[2],
                    "arguments": b[3],
                    "status": "completed",
                }
            )
    reason = INCOMPLETE_BY_FINISH.get(reply.finish_reason or openai_finish(reply.stop_reason))
    obj = response_object(
        resp_id=new_id("resp_"),
        created_at=now(),
        model=model or reply.model,
        output=output,
        status="incomplete" if reason else "completed",
        usage=usage_to_responses(reply.usage) if reply.usage else None,
        request=request,
        incomplete_reason=reason,
    )
    if meta is not None:
        obj["modelpool"] = meta
    return obj


def translate_body(
    obj: dict[str, Any],
    upstream: str,
    client: str,
    *,
    model: str | None = None,
    request: dict[str, Any] | None = None,
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An upstream success body (`upstream` "openai" | "anthropic") in the `client` dialect.

    Raises `MalformedUpstreamBody` when the body is not a reply of that dialect (some upstreams answer
    200 with an error or garbage): the walk treats it as the route's failure."""
    if upstream == "anthropic":
        shaped = isinstance(obj, dict) and isinstance(obj.get("content"), list)
    elif upstream == "gemini":
        shaped = isinstance(obj, dict) and isinstance(obj.get("candidates"), list)
    else:
        choices = obj.get("choices") if isinstance(obj, dict) else None
        shaped = isinstance(choices, list) and bool(choices) and isinstance(choices[0], dict)
    if not shaped or obj.get("error"):
        raise MalformedUpstreamBody(f"upstream body is not an {upstream} reply")
    try:
        if upstream == "gemini":
            reply = reply_from_gemini(obj, Reply())
        else:
            reply = reply_from_anthropic(obj) if upstream == "anthropic" else reply_from_openai(obj)
        if client == "anthropic":
            return to_anthropic(reply, model, meta)
        if client == "responses":
            return to_responses(reply, request, model, meta)
        if client == "gemini":
            return to_gemini(reply, model, meta)
        return to_openai(reply, model, meta)
    except (AttributeError, TypeError, KeyError, ValueError, IndexError) as exc:
        raise MalformedUpstreamBody(
            f"malformed upstream {upstream} body: {type(exc).__name__}: {exc}"
        ) from None


def error_parts(body: bytes | dict[str, Any] | None) -> tuple[str, str | None]:
    """(message, type) of an upstream error body in either dialect (or anything else)."""
    obj: Any = body
    if isinstance(body, bytes | bytearray):
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError:
            text = bytes(body).decode("utf-8", "replace").strip()
            return (text[:500] or "upstream error"), None
    err = obj.get("error") if isinstance(obj, dict) else None
    if isinstance(err, dict):
        message = err.get("message")
        return (message if isinstance(message, str) else orjson.dumps(err).decode()), err.get("type")
    if isinstance(err, str):
        return err, None
    return "upstream error", None


def translate_error(body: bytes | dict[str, Any] | None, status: int, client: str) -> bytes:
    """An upstream error body re-shaped for the client dialect, keeping its message and kind."""
    message, kind = error_parts(body)
    if client == "anthropic":
        return an.error_body(message, an.error_type_for(kind, status))
    if client == "gemini":
        return gemini_wire.error_body(status, message)
    if kind is None:
        kind = "invalid_request_error" if 400 <= status < 500 else "upstream_error"
    return openai_chat.error_body(message, kind)
