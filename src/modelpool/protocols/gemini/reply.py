"""A translated non-stream reply as a Gemini `GenerateContentResponse`."""

from __future__ import annotations

from typing import Any

import orjson

from modelpool.protocols.gemini.wire import (
    FINISH_TO_OPENAI,
    OPENAI_TO_FINISH,
    usage_from_gemini,
    usage_to_gemini,
)
from modelpool.protocols.mapping import new_id, openai_finish, parse_arguments
from modelpool.protocols.reply import Reply


def reply_from_gemini(obj: dict[str, Any], reply: Reply) -> Reply:
    """A `GenerateContentResponse` into the neutral reply (`translate_body`): candidate 0's parts."""
    cand = (obj.get("candidates") or [{}])[0]
    calls = 0
    for part in (cand.get("content") or {}).get("parts") or []:
        call = part.get("functionCall")
        if isinstance(call, dict):
            args = orjson.dumps(call.get("args") or {}).decode()
            reply.blocks.append(("tool", call.get("id") or new_id("call_"), call.get("name") or "", args))
            calls += 1
        elif isinstance(part.get("text"), str) and part["text"]:
            reply.blocks.append(
                (
                    "thinking" if part.get("thought") else "text",
                    part["text"],
                    *((None,) if part.get("thought") else ()),
                )
            )
    reason = cand.get("finishReason")
    reply.finish_reason = "tool_calls" if calls else FINISH_TO_OPENAI.get(reason or "STOP", "stop")
    reply.usage = usage_from_gemini(obj.get("usageMetadata"))
    reply.model = obj.get("modelVersion") or ""
    return reply


def finish_reason(openai_reason: str | None, anthropic_reason: str | None) -> str:
    reason = openai_reason or openai_finish(anthropic_reason)
    return OPENAI_TO_FINISH.get(reason, "STOP")


def empty_answer_text(reason: str, thoughts: bool) -> str:
    """What a translated reply with neither answer text nor a function call says instead of nothing.

    Gemini CLI takes a turn without a function call whose non-thought text is empty (after trimming) for
    a broken stream and sends the request again, with a nudge, several times (a space would not do: it
    trims). The other dialects end such an answer empty; here one text part says, in modelpool's name,
    what the upstream did — nothing is made up in the model's name."""
    if reason == "MAX_TOKENS":
        what = "reached its output token limit before writing any answer text"
    elif reason == "SAFETY":
        what = "was stopped by the upstream's content filter before writing any answer text"
    elif thoughts:
        what = "returned its reasoning but no answer text"
    else:
        what = "returned an empty answer"
    return f"[modelpool: the model {what}]"


def to_gemini(reply: Reply, model: str | None = None, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    for block in reply.blocks:
        kind = block[0]
        if kind == "thinking" and block[1]:
            parts.append({"text": block[1], "thought": True})
        elif kind in ("text", "refusal") and block[1]:
            parts.append({"text": block[1]})
        elif kind == "tool":
            call = {"id": block[1], "name": block[2], "args": parse_arguments(block[3])}
            parts.append({"functionCall": call})
    reason = finish_reason(reply.finish_reason, reply.stop_reason)
    if not any("functionCall" in p or (not p.get("thought") and p["text"].strip()) for p in parts):
        parts.append({"text": empty_answer_text(reason, any(p.get("thought") for p in parts))})
    candidate = {"content": {"role": "model", "parts": parts}, "finishReason": reason, "index": 0}
    obj: dict[str, Any] = {"candidates": [candidate]}
    if reply.usage:
        obj["usageMetadata"] = usage_to_gemini(reply.usage)
    obj["modelVersion"] = model or reply.model
    obj["responseId"] = new_id("")
    if meta is not None:
        obj["modelpool"] = meta
    return obj
