"""Anthropic Messages wire format: the full event sequence, non-stream bodies and the model list.

Stream order (shared/reference/streaming.md §4.2): message_start → ping → [thinking block with
thinking_delta… + signature_delta] → [scripted web search: server_tool_use block (input_json_delta…) +
web_search_tool_result block] → text block (citations_delta when it cites the search, text_delta…) or
tool_use block (input_json_delta…) → message_delta (stop_reason, cumulative usage with the cache figures
and `server_tool_use`) → message_stop. On the aggregator, `meta` lands as a
top-level `provider_metadata` on message_delta (stream) or on the message (non-stream), as Vercel does.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

import orjson

from modelpool.sim.errors import SimError
from modelpool.sim.plan import Plan
from modelpool.sim.provenance import seal
from modelpool.sim.spec import SimProvider
from modelpool.sim.stream import Script

STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}
_PING = b'event: ping\ndata: {"type": "ping"}\n\n'
_STOP = b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
_MALFORMED = b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":\n\n'


def event(kind: str, payload: dict[str, Any]) -> bytes:
    return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(payload) + b"\n\n"


def signature(plan: Plan) -> str:
    """A stable opaque signature for the thinking block (clients must pass it back verbatim); it names
    the provider that made it, so another provider can refuse it (provenance.py)."""
    return seal(plan.provider_id, plan.model_id, "".join(plan.reasoning))


SEARCH_URL = "https://example.com/modelpool-sim"
SEARCH_TITLE = "modelpool sim search result"


def _usage(plan: Plan) -> dict[str, Any]:
    # Anthropic counts cache reads and writes apart from `input_tokens` (which excludes both).
    cached = plan.cached_tokens + plan.cache_creation_tokens
    out: dict[str, Any] = {
        "input_tokens": max(1, plan.prompt_tokens - cached) if plan.prompt_tokens else 0,
        "cache_creation_input_tokens": plan.cache_creation_tokens,
        "cache_read_input_tokens": plan.cached_tokens,
        "output_tokens": plan.completion_tokens,
    }
    if plan.web_search is not None:
        out["server_tool_use"] = {"web_search_requests": 1}
    return out


def _search_id(plan: Plan) -> str:
    return "srvtoolu_" + hashlib.sha256(f"{plan.provider_id}:{plan.model_id}".encode()).hexdigest()[:24]


def _search_query(plan: Plan) -> dict[str, Any]:
    return {"query": f"{plan.model_id} sim search"}


def _search_result(plan: Plan) -> dict[str, Any]:
    result = {
        "type": "web_search_result",
        "url": SEARCH_URL,
        "title": SEARCH_TITLE,
        "encrypted_content": "EqgfCioIARgBIiQ" + _search_id(plan),
        "page_age": None,
    }
    return {"type": "web_search_tool_result", "tool_use_id": _search_id(plan), "content": [result]}


def _citation(plan: Plan) -> dict[str, Any]:
    return {
        "type": "web_search_result_location",
        "cited_text": "".join(plan.content)[:150],
        "url": SEARCH_URL,
        "title": SEARCH_TITLE,
        "encrypted_index": "Eo8BCioIAhgBIiQ" + _search_id(plan),
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
    content: list[bytes] = []
    if plan.web_search is not None:
        content += _search_frames(plan, index)
        index += 2
    content += _tool_frames(plan, index) if plan.tool_name is not None else _text_frames(plan, index)
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
    if not plan.content:  # an empty answer (a model scripted with `output_tokens=0`): no text block
        return []
    frames = [_delta(index, {"type": "text_delta", "text": tok}) for tok in plan.content]
    if plan.web_search is not None:  # the cited text: the citation arrives before its text
        frames[0] = _delta(index, {"type": "citations_delta", "citation": _citation(plan)}) + frames[0]
        return _block(index, frames, {"type": "text", "text": "", "citations": []})
    return _block(index, frames, {"type": "text", "text": ""})


def _search_frames(plan: Plan, index: int) -> list[bytes]:
    """A server_tool_use block (its query streamed as input_json_delta) and the result block (whole)."""
    query = orjson.dumps(_search_query(plan)).decode()
    half = len(query) // 2
    frames = [
        _delta(index, {"type": "input_json_delta", "partial_json": p})
        for p in ("", query[:half], query[half:])
    ]
    start: dict[str, Any] = {"type": "server_tool_use", "id": _search_id(plan), "name": plan.web_search}
    start["input"] = {}
    frames = _block(index, frames, start)
    result = event(
        "content_block_start",
        {"type": "content_block_start", "index": index + 1, "content_block": _search_result(plan)},
    )
    frames[-1] += result + event("content_block_stop", {"type": "content_block_stop", "index": index + 1})
    return frames


def _tool_frames(plan: Plan, index: int) -> list[bytes]:
    out: list[bytes] = []
    for i, call_id in enumerate(plan.call_ids):  # parallel calls: one tool_use block each
        pieces = ["", *plan.tool_fragments]  # real streams open with an empty partial_json
        frames = [_delta(index + i, {"type": "input_json_delta", "partial_json": p}) for p in pieces]
        start: dict[str, Any] = {"type": "tool_use", "id": tool_use_id(call_id), "name": plan.tool_name}
        out += _block(index + i, frames, {**start, "input": {}})
    return out


def tool_use_id(call_id: str) -> str:
    return "toolu_" + call_id.removeprefix("call_")


def error_frame(err: SimError) -> bytes:
    return event("error", err.anthropic_body())


def message_body(plan: Plan, meta: dict[str, Any] | None = None) -> bytes:
    content: list[dict[str, Any]] = []
    if plan.reasoning:
        content.append(
            {"type": "thinking", "thinking": "".join(plan.reasoning), "signature": signature(plan)}
        )
    if plan.web_search is not None:
        content.append(
            {
                "type": "server_tool_use",
                "id": _search_id(plan),
                "name": plan.web_search,
                "input": _search_query(plan),
            }
        )
        content.append(_search_result(plan))
    if plan.tool_name is not None:
        args = orjson.loads("".join(plan.tool_fragments))
        for call_id in plan.call_ids:
            content.append(
                {"type": "tool_use", "id": tool_use_id(call_id), "name": plan.tool_name, "input": args}
            )
    elif plan.web_search is not None:
        content.append({"type": "text", "text": "".join(plan.content), "citations": [_citation(plan)]})
    elif plan.content:  # an empty answer has no text block, as in the stream
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
