"""OpenAI Chat Completions wire format: stream chunks, non-stream bodies and the model list.

The same renderer serves the Vercel-like aggregator (`meta` given): it then speaks Vercel's dialect —
`delta.reasoning` instead of DeepSeek's `reasoning_content`, usage and `provider_metadata` on the
final chunk that carries `finish_reason`, and `generationId` (shared/reference/gateways.md §3.4).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import orjson

from modelpool.sim.errors import SimError
from modelpool.sim.plan import Plan
from modelpool.sim.request import CallRequest
from modelpool.sim.spec import SimProvider
from modelpool.sim.stream import Script

_DONE = b"data: [DONE]\n\n"
_MALFORMED = b'data: {"id": "chatcmpl-sim", "choices": [{"delta": {"content": \n\n'
CREATED = 1730000000  # fixed catalog timestamp: model lists are deterministic


def usage(plan: Plan) -> dict[str, Any]:
    completion = plan.completion_tokens
    return {
        "prompt_tokens": plan.prompt_tokens,
        "completion_tokens": completion,
        "total_tokens": plan.prompt_tokens + completion,
        "prompt_tokens_details": {"cached_tokens": plan.cached_tokens},
        "completion_tokens_details": {"reasoning_tokens": len(plan.reasoning)},
        **({"cache_creation_input_tokens": plan.cache_creation_tokens} if plan.cache_creation_tokens else {}),
    }


def stream_script(plan: Plan, req: CallRequest, meta: dict[str, Any] | None = None) -> Script:
    """Pre-encode every frame. `meta` (aggregator) = `{"gateway": {...}}` for `provider_metadata`."""
    vercel = meta is not None
    head = b'data: {"id":' + orjson.dumps(f"chatcmpl-{uuid.uuid4().hex}")
    head += b',"object":"chat.completion.chunk","created":' + str(int(time.time())).encode()
    head += b',"model":' + orjson.dumps(plan.model_id) + b',"system_fingerprint":"fp_sim"'
    prefix = head + b',"choices":[{"index":0,"delta":'
    suffix = (
        b',"logprobs":null,"finish_reason":null}]'
        + (b',"usage":null' if req.include_usage else b"")
        + b"}\n\n"
    )

    def frame(delta: dict[str, Any]) -> bytes:
        return prefix + orjson.dumps(delta) + suffix

    role = {"role": "assistant"} if vercel else {"role": "assistant", "content": ""}
    reasoning_key = "reasoning" if vercel else "reasoning_content"
    reasoning = [frame({reasoning_key: tok}) for tok in plan.reasoning]
    content = [frame({"content": tok}) for tok in plan.content] + _tool_frames(plan, frame)
    return Script(
        head=frame(role),
        reasoning=reasoning,
        content=content,
        tail=_tail(plan, req, head, meta),
        terminator=_DONE,
        malformed=_MALFORMED,
        render_error=error_frame,
    )


def _tool_frames(plan: Plan, frame: Any) -> list[bytes]:
    if plan.tool_name is None:
        return []
    # A Chat custom tool (`{"type": "custom"}`) streams its raw `input`; a function its JSON `arguments`.
    kind, key = ("custom", "input") if plan.tool_kind == "custom" else ("function", "arguments")
    frames = []
    for i, call_id in enumerate(plan.call_ids):  # parallel calls one after the other, by index
        first = {"index": i, "id": call_id, "type": kind, kind: {"name": plan.tool_name, key: ""}}
        frames.append(frame({"tool_calls": [first]}))
        frames += [frame({"tool_calls": [{"index": i, kind: {key: a}}]}) for a in plan.tool_fragments]
    return frames


def _tail(plan: Plan, req: CallRequest, head: bytes, meta: dict[str, Any] | None) -> bytes:
    if meta is not None:
        # Vercel: usage, provider_metadata and generationId only on the final chunk with finish_reason.
        choice = {
            "index": 0,
            "delta": {"provider_metadata": meta},
            "logprobs": None,
            "finish_reason": plan.finish,
        }
        rest = {
            "choices": [choice],
            "usage": usage(plan),
            "generationId": meta["gateway"].get("generationId"),
        }
        return _merge(head, rest)
    choice = {"index": 0, "delta": {}, "logprobs": None, "finish_reason": plan.finish}
    out = _merge(head, {"choices": [choice], **({"usage": None} if req.include_usage else {})})
    if req.include_usage:
        out += _merge(head, {"choices": [], "usage": usage(plan)})
    return out


def _merge(head: bytes, rest: dict[str, Any]) -> bytes:
    """`head` is an unterminated JSON object prefix; append `rest`'s members and close it."""
    return head + b"," + orjson.dumps(rest)[1:] + b"\n\n"


def error_frame(err: SimError) -> bytes:
    return b"data: " + orjson.dumps(err.openai_body()) + b"\n\n"


def completion_body(plan: Plan, meta: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": "".join(plan.content) if plan.content else None,
    }
    if plan.reasoning:
        message["reasoning" if meta is not None else "reasoning_content"] = "".join(plan.reasoning)
    if plan.tool_name is not None:
        kind, key = ("custom", "input") if plan.tool_kind == "custom" else ("function", "arguments")
        call = {"name": plan.tool_name, key: "".join(plan.tool_fragments)}
        message["tool_calls"] = [{"id": call_id, "type": kind, kind: call} for call_id in plan.call_ids]
    message["refusal"] = None
    if meta is not None:
        message["provider_metadata"] = meta
    body: dict[str, Any] = {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": plan.model_id,
        "system_fingerprint": "fp_sim",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": plan.finish}],
        "usage": usage(plan),
    }
    if meta is not None:
        body["generationId"] = meta["gateway"].get("generationId")
    return orjson.dumps(body)


def models_body(provider: SimProvider) -> bytes:
    """OpenAI list shape plus `type` (declared type) and `context_window`, which catalogs may read."""
    data = []
    for m in provider.models:
        entry: dict[str, Any] = {
            "id": m.id,
            "object": "model",
            "created": CREATED,
            "owned_by": provider.id,
        }
        if m.declared_type is not None:  # plain OpenAI-compatible providers declare no type
            entry["type"] = m.declared_type
        if m.context_window is not None:
            entry["context_window"] = m.context_window
        data.append(entry)
    return orjson.dumps({"object": "list", "data": data})
