"""OpenAI Responses wire format (`POST /v1/responses`): the stream's typed events and the response object.

Stream (shapes as in the official `openai` SDK's `types/responses`, framed `event: <type>\\ndata: {...}`,
every event with a running `sequence_number`): response.created → response.in_progress → per output item
`response.output_item.added` … `response.output_item.done`: a `reasoning` item (summary part + summary
text deltas when `reasoning.summary` was asked for; `encrypted_content` when `include` has
"reasoning.encrypted_content"), a `web_search_call` (scripted web search), then either a `message` (content
part added, `output_text.delta`…, `output_text.done`, content part done) or one tool call: `function_call`
(`function_call_arguments.delta`/`.done`), `custom_tool_call` (`custom_tool_call_input.delta`/`.done`) or
`local_shell_call`; finally `response.completed` (or `response.incomplete` at `max_output_tokens`) with
the whole response and its usage. No `[DONE]`. A provider with `responses_positions=False` leaves out
every event's `sequence_number`, `output_index` and `content_index`, as llama.cpp's server does.

On the aggregator the routing record goes on the response object as `providerMetadata`: non-stream that is
what Vercel is reported to do; on the stream's `response.completed` it is this sim's choice — whether
Vercel's Responses stream carries it at all is unconfirmed (shared/reference/gateways.md §3, open item 5).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import orjson

from modelpool.sim.errors import SimError
from modelpool.sim.plan import Plan
from modelpool.sim.provenance import ENCRYPTED_PREFIX, seal
from modelpool.sim.request import CallRequest
from modelpool.sim.stream import Script

_MALFORMED = b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":\n\n'
SEARCH_URL = "https://example.com/modelpool-sim"


def new_response_id() -> str:
    return f"resp_{uuid.uuid4().hex}"


def encrypted_reasoning(plan: Plan) -> str:
    """An opaque blob naming who made it (a provider can tell its own reasoning from another's)."""
    return seal(plan.provider_id, plan.model_id, "".join(plan.reasoning), ENCRYPTED_PREFIX)


def usage(plan: Plan) -> dict[str, Any]:
    out = plan.completion_tokens
    return {
        "input_tokens": plan.prompt_tokens,
        # `cache_write_tokens` is required by the current SDK models (openai 3.x `ResponseUsage`).
        "input_tokens_details": {
            "cached_tokens": plan.cached_tokens,
            "cache_write_tokens": plan.cache_creation_tokens,
        },
        "output_tokens": out,
        "output_tokens_details": {"reasoning_tokens": len(plan.reasoning)},
        "total_tokens": plan.prompt_tokens + out,
    }


class _Events:
    """Encodes events in order, numbering them (or, `positions=False`, with no number or position)."""

    def __init__(self, positions: bool = True) -> None:
        self.seq = 0
        self.positions = positions

    def __call__(self, kind: str, **fields: Any) -> bytes:
        if self.positions:
            payload = {"type": kind, **fields, "sequence_number": self.seq}
        else:
            payload = {"type": kind, **{k: v for k, v in fields.items() if k not in _POSITIONS}}
        self.seq += 1
        return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(payload) + b"\n\n"


_POSITIONS = ("output_index", "content_index")


def response_object(
    resp_id: str,
    plan: Plan,
    req: CallRequest,
    status: str,
    output: list[dict[str, Any]],
    meta: dict[str, Any] | None,
) -> dict[str, Any]:
    body = req.body
    done = status in ("completed", "incomplete")
    reasoning = _dict(body.get("reasoning"))
    text = _dict(body.get("text"))
    obj: dict[str, Any] = {
        "id": resp_id,
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": plan.model_id,
        "output": output,
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": req.previous_response_id,
        "prompt_cache_key": body.get("prompt_cache_key"),
        "reasoning": {"effort": reasoning.get("effort"), "summary": reasoning.get("summary")},
        "service_tier": "default",
        "store": req.store,
        "temperature": body.get("temperature", 1.0),
        "text": {"format": {"type": "text"}, "verbosity": "medium", **text},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "top_p": body.get("top_p", 1.0),
        "truncation": body.get("truncation", "disabled"),
        "usage": usage(plan) if done else None,
        "user": None,
        "metadata": body.get("metadata") or {},
    }
    if meta is not None and done:
        obj["providerMetadata"] = meta
    return obj


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


class _Items:
    """The output items of one reply, with their ids, rendered whole (non-stream, `.done` events)."""

    def __init__(self, plan: Plan, req: CallRequest) -> None:
        self.plan = plan
        self.req = req
        hexid = uuid.uuid4().hex
        self.rs_id, self.ws_id, self.msg_id = f"rs_{hexid}", f"ws_{hexid}", f"msg_{hexid}"
        self.call_item_id = {"custom": "ctc_", "local_shell": "lsh_"}.get(plan.tool_kind, "fc_") + hexid

    @property
    def text(self) -> str:
        return "".join(self.plan.content)

    def reasoning(self) -> dict[str, Any]:
        plan = self.plan
        item: dict[str, Any] = {"id": self.rs_id, "type": "reasoning", "summary": []}
        if self.req.reasoning_summary:
            item["summary"] = [{"type": "summary_text", "text": "".join(plan.reasoning)}]
        if "reasoning.encrypted_content" in self.req.include:
            item["encrypted_content"] = encrypted_reasoning(plan)
        return item

    def web_search(self, status: str = "completed") -> dict[str, Any]:
        action = {"type": "search", "query": f"{self.plan.model_id} sim search"}
        return {"id": self.ws_id, "type": "web_search_call", "status": status, "action": action}

    def annotations(self) -> list[dict[str, Any]]:
        if self.plan.web_search is None:
            return []
        return [
            {
                "type": "url_citation",
                "start_index": 0,
                "end_index": len(self.text),
                "url": SEARCH_URL,
                "title": "modelpool sim search result",
            }
        ]

    def part(self, text: str, annotations: list[dict[str, Any]]) -> dict[str, Any]:
        return {"type": "output_text", "text": text, "annotations": annotations, "logprobs": []}

    def message(self, status: str = "completed") -> dict[str, Any]:
        content = [self.part(self.text, self.annotations())] if status == "completed" else []
        return {
            "id": self.msg_id,
            "type": "message",
            "status": status,
            "role": "assistant",
            "content": content,
        }

    def call(self, status: str = "completed", n: int = 0) -> dict[str, Any]:
        """The reply's `n`th tool call (parallel calls of one function: n > 0)."""
        plan = self.plan
        payload = "".join(plan.tool_fragments) if status == "completed" else ""
        if n:
            return {**self.call(status), "id": f"{self.call_item_id}_{n}", "call_id": plan.call_ids[n]}
        if plan.tool_kind == "local_shell":
            action = {"type": "exec", "command": list(plan.tool_command), "env": {}}
            return {
                "id": self.call_item_id,
                "type": "local_shell_call",
                "status": status,
                "call_id": plan.tool_id,
                "action": action,
            }
        if plan.tool_kind == "custom":
            return {
                "id": self.call_item_id,
                "type": "custom_tool_call",
                "status": status,
                "call_id": plan.tool_id,
                "name": plan.tool_name,
                "input": payload,
            }
        return {
            "id": self.call_item_id,
            "type": "function_call",
            "status": status,
            "arguments": payload,
            "call_id": plan.tool_id,
            "name": plan.tool_name,
        }

    def output(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [self.reasoning()] if self.plan.reasoning else []
        if self.plan.web_search is not None:
            out.append(self.web_search())
        if self.plan.tool_name is None:
            return [*out, self.message()]
        return out + [self.call(n=n) for n in range(len(self.plan.call_ids))]


def body(plan: Plan, req: CallRequest, resp_id: str, meta: dict[str, Any] | None = None) -> bytes:
    """The non-stream reply: the response object."""
    status = "incomplete" if plan.finish == "length" else "completed"
    return orjson.dumps(response_object(resp_id, plan, req, status, _Items(plan, req).output(), meta))


def stream_script(
    plan: Plan, req: CallRequest, resp_id: str, meta: dict[str, Any] | None = None, positions: bool = True
) -> Script:
    ev = _Events(positions)
    items = _Items(plan, req)
    pending = response_object(resp_id, plan, req, "in_progress", [], None)
    head = ev("response.created", response=pending) + ev("response.in_progress", response=pending)
    index = 0
    reasoning: list[bytes] = []
    if plan.reasoning:
        reasoning = _reasoning_frames(ev, items, index)
        index += 1
    content: list[bytes] = []
    if plan.web_search is not None:
        content.append(_search_frame(ev, items, index))
        index += 1
    if plan.tool_name is None:
        content += _message_frames(ev, items, index)
    else:
        for n in range(len(plan.call_ids)):
            content += _call_frames(ev, items, index + n, n)
    marks = _marks(head, reasoning, content)
    status = "incomplete" if plan.finish == "length" else "completed"
    final = response_object(resp_id, plan, req, status, items.output(), meta)
    terminator = ev(f"response.{status}", response=final)
    return Script(
        head=head,
        reasoning=reasoning,
        content=content,
        tail=b"",
        terminator=terminator,
        malformed=_MALFORMED,
        render_error=lambda err: _failed(resp_id, plan, req, err, marks(len(content)) if positions else None),
        error_at=lambda err, sent: _failed(resp_id, plan, req, err, marks(sent) if positions else None),
    )


def _marks(head: bytes, reasoning: list[bytes], content: list[bytes]) -> Callable[[int], int]:
    """The sequence number due after k content frames, so a mid-stream error keeps the numbering gap-free.
    Each event ends in `,"sequence_number":N}`; inside a JSON string that quote would be escaped."""

    def count(frame: bytes) -> int:
        return frame.count(b',"sequence_number":')

    base = count(head) + sum(count(f) for f in reasoning)
    ends = [base]
    for frame in content:
        ends.append(ends[-1] + count(frame))
    return lambda sent: ends[min(max(0, sent), len(content))]


def _failed(resp_id: str, plan: Plan, req: CallRequest, err: SimError, seq: int | None) -> bytes:
    obj = response_object(resp_id, plan, req, "failed", [], None)
    obj["error"] = {"code": err.code or err.etype, "message": err.message}
    payload: dict[str, Any] = {"type": "response.failed", "response": obj}
    if seq is not None:
        payload["sequence_number"] = seq
    return b"event: response.failed\ndata: " + orjson.dumps(payload) + b"\n\n"


def _reasoning_frames(ev: _Events, items: _Items, index: int) -> list[bytes]:
    plan = items.plan
    item_id = items.rs_id
    start = ev("response.output_item.added", output_index=index, item={**items.reasoning(), "summary": []})
    if not items.req.reasoning_summary:
        # No summary asked for: the model thinks silently; empty frames keep the pacing of its tokens.
        frames = [b""] * len(plan.reasoning)
        frames[0] = start
        frames[-1] += ev("response.output_item.done", output_index=index, item=items.reasoning())
        return frames
    ids = {"item_id": item_id, "output_index": index, "summary_index": 0}
    start += ev("response.reasoning_summary_part.added", **ids, part={"type": "summary_text", "text": ""})
    frames = [ev("response.reasoning_summary_text.delta", **ids, delta=tok) for tok in plan.reasoning]
    frames[0] = start + frames[0]
    text = "".join(plan.reasoning)
    frames[-1] += ev("response.reasoning_summary_text.done", **ids, text=text)
    frames[-1] += ev(
        "response.reasoning_summary_part.done", **ids, part={"type": "summary_text", "text": text}
    )
    frames[-1] += ev("response.output_item.done", output_index=index, item=items.reasoning())
    return frames


def _search_frame(ev: _Events, items: _Items, index: int) -> bytes:
    ids = {"item_id": items.ws_id, "output_index": index}
    out = ev("response.output_item.added", output_index=index, item=items.web_search("in_progress"))
    out += ev("response.web_search_call.in_progress", **ids)
    out += ev("response.web_search_call.searching", **ids)
    out += ev("response.web_search_call.completed", **ids)
    return out + ev("response.output_item.done", output_index=index, item=items.web_search())


def _message_frames(ev: _Events, items: _Items, index: int) -> list[bytes]:
    plan = items.plan
    ids = {"item_id": items.msg_id, "output_index": index, "content_index": 0}
    start = ev("response.output_item.added", output_index=index, item=items.message("in_progress"))
    start += ev("response.content_part.added", **ids, part=items.part("", []))
    frames = [ev("response.output_text.delta", **ids, delta=tok, logprobs=[]) for tok in plan.content]
    frames = frames or [b""]  # an empty answer: a message item with empty text
    frames[0] = start + frames[0]
    annotations = items.annotations()
    for i, annotation in enumerate(annotations):
        frames[-1] += ev(
            "response.output_text.annotation.added", **ids, annotation_index=i, annotation=annotation
        )
    frames[-1] += ev("response.output_text.done", **ids, text=items.text, logprobs=[])
    frames[-1] += ev("response.content_part.done", **ids, part=items.part(items.text, annotations))
    frames[-1] += ev("response.output_item.done", output_index=index, item=items.message())
    return frames


def _call_frames(ev: _Events, items: _Items, index: int, n: int = 0) -> list[bytes]:
    plan = items.plan
    added = ev("response.output_item.added", output_index=index, item=items.call("in_progress", n))
    done = ev("response.output_item.done", output_index=index, item=items.call(n=n))
    if plan.tool_kind == "local_shell":
        return [added, done]  # the action is whole from the start: no delta events exist for it
    ids = {"item_id": items.call(n=n)["id"], "output_index": index}
    kind = "custom_tool_call_input" if plan.tool_kind == "custom" else "function_call_arguments"
    payload = "".join(plan.tool_fragments)
    frames = [ev(f"response.{kind}.delta", **ids, delta=piece) for piece in plan.tool_fragments]
    if not frames:
        frames = [b""]
    frames[0] = added + frames[0]
    key = "input" if plan.tool_kind == "custom" else "arguments"
    frames[-1] += ev(f"response.{kind}.done", **ids, **{key: payload})
    frames[-1] += done
    return frames
