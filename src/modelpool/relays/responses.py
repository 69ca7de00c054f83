"""Native relay of OpenAI Responses streams: a Responses client on a route that serves `/v1/responses`.

Every event reaches the client as it came — `custom_tool_call_input.delta`, `local_shell_call` items,
encrypted reasoning, web search calls, whatever the API adds. Held back: `response.created` /
`response.in_progress` until the first reasoning or answer event (a route that dies first leaves no trace).
The terminal `response.completed` / `response.incomplete` carries the `modelpool` metadata on its response
object; `response.failed` and `error` are failures of the attempt.

After the commit point a read with no terminal or error event goes out as bytes without a JSON parse, and
so does the run of such events before the terminal one in a read that holds it (a burst reply); the last
`sequence_number` in those bytes is still read, so an error event after them is numbered after it.

When an earlier attempt already sent the preamble and reasoning items, this attempt continues that stream:
its preamble is dropped, `sequence_number` and `output_index` go on from the client's last, an item the
earlier attempt left open is closed first, and the final response keeps the client's response id.

An upstream whose events lack `sequence_number`, `output_index` or `content_index` (llama.cpp's server
sends none of them) is completed: the first parsed event that lacks one (its `response.created`) turns
the attempt into a rewriting one — each event parsed, the missing positions filled
(`protocols.responses_indices`), numbered from the client's next `sequence_number` and re-encoded — so the
SDK's `responses.stream()` helper works on it. A conformant upstream never meets that path: its events
are checked only while they are parsed anyway (before the commit point), and go out as they came.
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from modelpool.aggregators import find_routing
from modelpool.health.classify import FailureKind
from modelpool.protocols.responses_indices import EventIndices, incomplete
from modelpool.protocols.sse import SSEEvent
from modelpool.relays.native import NativeStream, plain_run
from modelpool.relays.reads import in_stream_failure_kind
from modelpool.upstream.client import AttemptFailure

_TERMINAL = frozenset({"response.completed", "response.incomplete"})
_PREAMBLE = frozenset({"response.created", "response.in_progress", "response.queued"})
_SPECIAL = (b'"response.completed"', b'"response.incomplete"', b'"response.failed"', b'"error"')
# Output items that are the answer itself (a tool call of any kind): adding one commits the walk.
_CALL_ITEMS = frozenset(
    {
        "function_call",
        "custom_tool_call",
        "local_shell_call",
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "computer_call",
        "mcp_call",
        "shell_call",
        "apply_patch_call",
    }
)
_CONTENT_DELTAS = frozenset(
    {
        "response.output_text.delta",
        "response.refusal.delta",
        "response.function_call_arguments.delta",
        "response.custom_tool_call_input.delta",
    }
)
_REASONING_DELTAS = frozenset(
    {"response.reasoning_summary_text.delta", "response.reasoning_text.delta", "response.reasoning.delta"}
)


class _Attempt:
    __slots__ = (
        "_seq",
        "continuing",
        "forwarded",
        "index_offset",
        "indices",
        "items",
        "max_index",
        "open",
        "rewrite",
        "run",
        "seq_offset",
    )

    def __init__(self, continuing: bool, seq_offset: int, index_offset: int) -> None:
        self.continuing = continuing  # continuing an earlier attempt's stream
        self.rewrite = continuing  # every event parsed and re-encoded (continuing, or completing)
        self.indices: EventIndices | None = None  # the upstream leaves positions out: completing them
        self.seq_offset = seq_offset
        self.index_offset = index_offset
        self._seq = -1
        # The last run forwarded unparsed, (read, start, end): its last sequence_number is read only when
        # someone needs it (an error event, a hand-over), not once per read at model speed.
        self.run: tuple[bytes, int, int] | None = None
        self.max_index = -1
        self.open: dict[int, dict[str, Any]] = {}  # output_index → item added, not yet done
        self.items: list[dict[str, Any]] = []  # items done
        self.forwarded = False

    @property
    def seq(self) -> int:
        """The last client-side sequence_number sent."""
        if self.run is not None:
            data, start, end = self.run
            self.run = None
            _last_seq(data, start, end, self)
        return self._seq

    @seq.setter
    def seq(self, value: int) -> None:
        self.run = None  # a later event than the run's
        self._seq = value


def meaning(kind: str, obj: dict[str, Any]) -> tuple[bool, bool]:
    """(meaningful, content) of one Responses event."""
    if kind in _CONTENT_DELTAS:
        return bool(obj.get("delta")), bool(obj.get("delta"))
    if kind in _REASONING_DELTAS:
        return bool(obj.get("delta")), False
    if kind in ("response.output_item.added", "response.output_item.done"):
        item = obj.get("item")
        itype = item.get("type") if isinstance(item, dict) else None
        if itype in _CALL_ITEMS:
            return True, True
        if itype == "reasoning" and kind == "response.output_item.done":
            return True, False
    return False, False


class ResponsesStream(NativeStream):
    upstream_id: str | None = None  # the id the serving upstream stored its response under

    UNTERMINATED = "upstream stream ended before response.completed"

    def begin(self) -> _Attempt:
        cs = self.cs
        return _Attempt(cs.continuing, cs.seq, cs.next_index if cs.continuing else 0)

    def passing(self, a: _Attempt) -> bool:
        return self.cs.committed and not a.rewrite

    def plain_end(self, data: bytes, pos: int, a: _Attempt) -> int:
        end = plain_run(data, pos, _SPECIAL)
        if end > pos:
            a.run = (data, pos, end)
        return end

    async def _on_event(self, ev: SSEEvent, a: _Attempt, held: list[bytes], out: list[bytes]) -> bool:
        try:
            obj = orjson.loads(ev.data)
        except orjson.JSONDecodeError:
            raise AttemptFailure(FailureKind.SERVER, "malformed event from upstream (not JSON)") from None
        if not isinstance(obj, dict):
            raise AttemptFailure(FailureKind.SERVER, "malformed event from upstream: not a JSON object")
        kind = obj.get("type") or ev.event or ""
        if kind == "error" or kind == "response.failed":
            raise _failure(obj)
        if a.indices is None and incomplete(kind, obj):
            a.indices = EventIndices(a.open, a.max_index + 1)
            a.rewrite = True
        if kind in _PREAMBLE:
            if not a.continuing:
                response = obj.get("response")
                if kind == "response.created" and isinstance(response, dict):
                    self.cs.response_id = response.get("id")
                held.append(self._frame(kind, obj, a) if a.rewrite else self._track(obj, a, ev.raw))
            return False
        if kind in _TERMINAL:
            await self._finish(kind, obj, a, held, out)
            return True
        meaningful, content = meaning(kind, obj)
        if a.indices is not None:
            a.indices.fill(kind, obj)
        self._items(kind, obj, a)
        raw = self._rewrite(kind, obj, a, out) if a.rewrite else self._track(obj, a, ev.raw)
        if meaningful:
            if self.first_at is None:
                self.first_at = time.monotonic()
            await self.ensure_started()
            if held:
                out.extend(held)
                held.clear()
            if content:
                self.cs.committed = True
        (out if self.cs.started else held).append(raw)
        a.forwarded = a.forwarded or self.cs.started
        return False

    @staticmethod
    def _track(obj: dict[str, Any], a: _Attempt, raw: bytes = b"") -> bytes:
        seq = obj.get("sequence_number")
        if isinstance(seq, int):
            a.seq = seq
        return raw

    @staticmethod
    def _items(kind: str, obj: dict[str, Any], a: _Attempt) -> None:
        index, item = obj.get("output_index"), obj.get("item")
        if not isinstance(index, int) or not isinstance(item, dict):
            return
        a.max_index = max(a.max_index, index)
        if kind == "response.output_item.added":
            a.open[index] = item
        elif kind == "response.output_item.done":
            a.open.pop(index, None)
            a.items.append(item)

    def _rewrite(self, kind: str, obj: dict[str, Any], a: _Attempt, out: list[bytes]) -> bytes:
        """Continue the client's stream (close the item an earlier attempt left open, output indices after
        its items) and number the event: a continuing or a completed attempt."""
        cs = self.cs
        if cs.open_item is not None:
            out.append(
                self._frame(
                    "response.output_item.done", {"output_index": cs.next_index - 1, "item": cs.open_item}, a
                )
            )
            cs.open_item = None
        if isinstance(obj.get("output_index"), int):
            obj["output_index"] += a.index_offset
        return self._frame(kind, obj, a)

    def _frame(self, kind: str, obj: dict[str, Any], a: _Attempt) -> bytes:
        a.seq = a.seq_offset if a.seq < a.seq_offset else a.seq + 1
        obj["type"] = kind
        obj["sequence_number"] = a.seq
        return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(obj) + b"\n\n"

    async def _finish(
        self, kind: str, obj: dict[str, Any], a: _Attempt, held: list[bytes], out: list[bytes]
    ) -> None:
        await self.ensure_started()
        self.cs.committed = True
        out.extend(held)
        held.clear()
        response = obj.get("response")
        if not isinstance(response, dict):
            response = obj["response"] = {}
        self.usage = usage_from_responses(response.get("usage"))
        self.upstream_id = response.get("id") if isinstance(response.get("id"), str) else None
        self.state.add_usage(
            self.route_key, self.usage
        )  # cost (SPEC §14), before the metadata that carries it
        if self.aggregator:
            self.routing = find_routing(response) or self.routing
        if a.continuing:
            response["id"] = self.cs.response_id or response.get("id")
            response["output"] = [*self.cs.items, *(response.get("output") or [])]
        response["modelpool"] = self.state.metadata()
        out.append(self._frame(kind, obj, a) if a.rewrite else _encode(kind, obj))

    def hand_over(self, a: _Attempt) -> None:
        if not a.forwarded:
            return
        cs = self.cs
        cs.preamble_sent = True
        cs.seq = a.seq + 1
        if a.max_index >= 0:
            cs.next_index = a.index_offset + a.max_index + 1
        cs.items.extend(a.items)
        if a.open:
            index = max(a.open)
            item = dict(a.open[index])
            item["status"] = "incomplete"
            cs.open_item = item

    def error_event(self, message: str, type: str = "api_error", status: int = 502) -> bytes:
        """Responses' `error` event (what the SDK raises on), numbered after the client's last event."""
        obj = {
            "type": "error",
            "code": type,
            "message": message,
            "param": None,
            "sequence_number": self.cs.seq,
        }
        return _encode("error", obj)


def usage_from_responses(u: Any) -> dict[str, int] | None:
    """Responses usage in the normalized flat shape of `protocols.mapping`."""
    if not isinstance(u, dict):
        return None
    cached = (u.get("input_tokens_details") or {}).get("cached_tokens") or 0
    reasoning = (u.get("output_tokens_details") or {}).get("reasoning_tokens") or 0
    prompt, completion = int(u.get("input_tokens") or 0), int(u.get("output_tokens") or 0)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": int(u.get("total_tokens") or prompt + completion),
        "cached_tokens": int(cached),
        "cache_creation_tokens": 0,
        "reasoning_tokens": int(reasoning),
    }


def _last_seq(run: bytes, start: int, end: int, a: _Attempt) -> None:
    """The `sequence_number` of the last event of a run (`run[start:end]`) forwarded unparsed, so an error
    event after it goes on from there. Outside JSON strings a bare `"sequence_number":` is only ever an
    event's own key (quotes inside strings are escaped) and items carry none, so the last one is the last
    event's. Searched in place from the end (no copy of the run)."""
    at = run.rfind(b'"sequence_number":', start, end)
    if at < 0:
        return
    digits = run[at + 18 : min(at + 40, end)].lstrip(b" ")
    n = 0
    while n < len(digits) and 48 <= digits[n] <= 57:
        n += 1
    if n:
        a._seq = int(digits[:n])


def _encode(kind: str, obj: dict[str, Any]) -> bytes:
    return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(obj) + b"\n\n"


def _failure(obj: dict[str, Any]) -> AttemptFailure:
    error = obj.get("error")
    if error is None and isinstance(obj.get("response"), dict):
        error = obj["response"].get("error")
    message = error.get("message") if isinstance(error, dict) else obj.get("message")
    if not isinstance(message, str):
        message = orjson.dumps(error or obj).decode()
    return AttemptFailure(in_stream_failure_kind(message), f"upstream error in stream: {message}")
