"""Anthropic Messages wire format: the full event sequence, non-stream bodies and the model list.

Stream order (shared/reference/streaming.md §4.2): message_start → ping → [thinking block with
thinking_delta… + signature_delta] → text block (text_delta…) or tool_use block (input_json_delta…) →
message_delta (stop_reason, cumulative usage) → message_stop. On the aggregator, `meta` lands as a
top-level `provider_metadata` on message_delta (stream) or on the message (non-stream), as Vercel does.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

import orjson

from modelpool.sim.errors import SimError
from modelpool.sim.plan import Plan
from modelpool.sim.spec import SimProvider
from modelpool.sim.stream import Script

STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}
_PING = b'event: ping\ndata: {"type": "ping"}\n\n'
_STOP = b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
_MALFORMED = b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":\n\n'


def event(kind: str, payload: dict[str, Any]) -> bytes:
    return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(payload) + b"\n\n"


def signature(plan: Plan) -> str:
    """A stable opaque signature for the thinking block (clients must pass it back verbatim)."""
    return hashlib.sha256("".join(plan.reasoning).encode()).hexdigest()


def _usage(plan: Plan) -> dict[str, Any]:
    return {
        "input_tokens": plan.prompt_tokens - plan.cached - plan.cache_write,
        "cache_creation_input_tokens": plan.cache_write,
        "cache_read_input_tokens": plan.cached,
        "output_tokens": plan.completion_tokens,
    }


def _message_id(meta: dict[str, Any] | None) -> str:
    return f"gen_{uuid.uuid4().hex}" if meta is not None else f"msg_{uuid.uuid4().hex[:24]}"


def stream_script(plan: Plan, meta: dict[str, Any] | None = None) -> Script:
    message: dict[str, Any] = {
        "id": _message_id(meta),
        "type": "message",
        "role": "assistant",
        "model": plan.model_id,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**_usage(plan), "output_tokens": 1},
    }
    head = event("message_start", {"type": "message_start", "message": message}) + _PING
    reasoning = _thinking_frames(plan)
    index = 1 if reasoning else 0
    content = _tool_frames(plan, index) if plan.tool_name is not None else _text_frames(plan, index)
    delta: dict[str, Any] = {
        "type": "message_delta",
        "delta": {"stop_reason": STOP_REASONS[plan.finish], "stop_sequence": None},
        "usage": _usage(plan),
    }
    if meta is not None:
        delta["provider_metadata"] = meta
    return Script(
        head=head,
        reasoning=reasoning,
        content=content,
        tail=event("message_delta", delta),
        terminator=_STOP,
        malformed=_MALFORMED,
        render_error=error_frame,
    )


def _block(index: int, frames: list[bytes], start: dict[str, Any], extra_end: bytes = b"") -> list[bytes]:
    """Fold block start/stop into the first/last frame so pacing and `after_tokens` count tokens only."""
    frames[0] = (
        event("content_block_start", {"type": "content_block_start", "index": index, "content_block": start})
        + frames[0]
    )
    frames[-1] += extra_end + event("content_block_stop", {"type": "content_block_stop", "index": index})
    return frames


def _delta(index: int, delta: dict[str, Any]) -> bytes:
    return event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})


def _thinking_frames(plan: Plan) -> list[bytes]:
    if not plan.reasoning:
        return []
    frames = [_delta(0, {"type": "thinking_delta", "thinking": tok}) for tok in plan.reasoning]
    sig = _delta(0, {"type": "signature_delta", "signature": signature(plan)})
    return _block(0, frames, {"type": "thinking", "thinking": "", "signature": ""}, sig)


def _text_frames(plan: Plan, index: int) -> list[bytes]:
    frames = [_delta(index, {"type": "text_delta", "text": tok}) for tok in plan.content]
    return _block(index, frames, {"type": "text", "text": ""})


def _tool_frames(plan: Plan, index: int) -> list[bytes]:
    pieces = ["", *plan.tool_fragments]  # real streams open with an empty partial_json
    frames = [_delta(index, {"type": "input_json_delta", "partial_json": p}) for p in pieces]
    start: dict[str, Any] = {"type": "tool_use", "id": tool_use_id(plan), "name": plan.tool_name, "input": {}}
    return _block(index, frames, start)


def tool_use_id(plan: Plan) -> str:
    return "toolu_" + (plan.tool_id or "").removeprefix("call_")


def error_frame(err: SimError) -> bytes:
    return event("error", err.anthropic_body())


def message_body(plan: Plan, meta: dict[str, Any] | None = None) -> bytes:
    content: list[dict[str, Any]] = []
    if plan.reasoning:
        content.append(
            {"type": "thinking", "thinking": "".join(plan.reasoning), "signature": signature(plan)}
        )
    if plan.tool_name is not None:
        args = orjson.loads("".join(plan.tool_fragments))
        content.append({"type": "tool_use", "id": tool_use_id(plan), "name": plan.tool_name, "input": args})
    else:
        content.append({"type": "text", "text": "".join(plan.content)})
    body: dict[str, Any] = {
        "id": _message_id(meta),
        "type": "message",
        "role": "assistant",
        "model": plan.model_id,
        "content": content,
        "stop_reason": STOP_REASONS[plan.finish],
        "stop_sequence": None,
        "usage": _usage(plan),
    }
    if meta is not None:
        body["provider_metadata"] = meta
    return orjson.dumps(body)


def models_body(provider: SimProvider) -> bytes:
    """Anthropic list shape (`data`, `has_more`, `first_id`, `last_id`)."""
    data = [
        {"type": "model", "id": m.id, "display_name": m.id, "created_at": "2025-01-01T00:00:00Z"}
        for m in provider.models
    ]
    first = data[0]["id"] if data else None
    last = data[-1]["id"] if data else None
    return orjson.dumps({"data": data, "has_more": False, "first_id": first, "last_id": last})


def count_tokens_body(prompt_tokens: int) -> bytes:
    return orjson.dumps({"input_tokens": prompt_tokens})
