"""A translated non-stream reply as a Gemini `GenerateContentResponse`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from modelpool.protocols.gemini.wire import OPENAI_TO_FINISH, usage_to_gemini
from modelpool.protocols.mapping import new_id, openai_finish, parse_arguments

if TYPE_CHECKING:
    from modelpool.protocols.translate_body import Reply


def finish_reason(openai_reason: str | None, anthropic_reason: str | None) -> str:
    reason = openai_reason or openai_finish(anthropic_reason)
    return OPENAI_TO_FINISH.get(reason, "STOP")


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
    if not parts:
        parts.append({"text": ""})
    candidate = {
        "content": {"role": "model", "parts": parts},
        "finishReason": finish_reason(reply.finish_reason, reply.stop_reason),
        "index": 0,
    }
    obj: dict[str, Any] = {"candidates": [candidate]}
    if reply.usage:
        obj["usageMetadata"] = usage_to_gemini(reply.usage)
    obj["modelVersion"] = model or reply.model
    obj["responseId"] = new_id("")
    if meta is not None:
        obj["modelpool"] = meta
    return obj
