"""Native relay of Anthropic Messages streams: an Anthropic client on a route that speaks Messages.

The upstream's events reach the client as they came — citations, `server_tool_use`, web search results,
`signature_delta`, anything a newer API adds. Held back: the preamble (`message_start`, pings, an empty
block start) until the first reasoning or answer event, so a route that dies first leaves no trace; and
`message_delta` until `message_stop`, so the `modelpool` metadata rides on it and a stream cut before
its terminator never looks complete.

After the commit point a read with no final or error event goes out as bytes without a JSON parse, and so
does the run of such events before the final one in a read that holds it (a burst reply). When an
earlier attempt already sent the preamble and some blocks (reasoning before a failure), this attempt
continues that stream: its `message_start` is dropped and its block indices are shifted (`ClientStream`).
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from modelpool.aggregators import find_routing
from modelpool.protocols import anthropic as an
from modelpool.protocols.sse import SSEEvent
from modelpool.relays.native import NativeStream, plain_run
from modelpool.relays.reads import in_stream_failure_kind
from modelpool.upstream.client import AttemptFailure

# A read holding none of these can be forwarded unparsed once committed. Inside a JSON string a quote is
# escaped, so `"message_delta"` with bare quotes only ever appears as an event's type.
_SPECIAL = (b'"message_delta"', b'"message_stop"', b'"error"')


class _Attempt:
    """Per-attempt bookkeeping of the blocks this upstream opened (for a later attempt to continue)."""

    __slots__ = ("delta", "forwarded", "max_index", "offset", "open_index", "pending_close", "start_usage")

    def __init__(self, offset: int, pending_close: int | None) -> None:
        self.offset = offset  # shift of this upstream's block indices in the client's stream
        self.pending_close = pending_close  # a block an earlier attempt left open, closed before ours
        self.max_index = -1
        self.open_index: int | None = None
        self.start_usage: Any = None
        self.delta: dict[str, Any] | None = None  # message_delta, held for message_stop
        self.forwarded = False


class AnthropicStream(NativeStream):
    UNTERMINATED = "upstream stream ended without message_stop"

    def begin(self) -> _Attempt:
        cs = self.cs
        return _Attempt(cs.next_index if cs.continuing else 0, cs.open_index if cs.continuing else None)

    def passing(self, a: _Attempt) -> bool:
        return self.cs.committed and not a.offset and a.pending_close is None

    def plain_end(self, data: bytes, pos: int, a: _Attempt) -> int:
        return plain_run(data, pos, _SPECIAL)

    async def _on_event(self, ev: SSEEvent, a: _Attempt, held: list[bytes], out: list[bytes]) -> bool:
        """One parsed event; True at `message_stop` (the reply is complete)."""
        info = an.inspect(ev)
        if info.error is not None:
            raise _failure(info.error)
        kind = info.event_name
        if kind == "message_start":
            a.start_usage = info.usage
            self.partial_usage = an.normalized_usage(info.usage, None)
            if not self.cs.continuing:
                message = info.obj.get("message")
                if isinstance(message, dict) and isinstance(message.get("id"), str):
                    self.cs.message_id = message["id"]
                held.append(ev.raw)
            return False
        if kind == "message_delta":
            a.delta = info.obj
            return False
        if kind == "message_stop":
            await self._finish(ev.raw, a, held, out)
            return True
        raw = ev.raw
        if kind is not None and kind.startswith("content_block_"):
            raw = self._block(kind, info.obj, raw, a, out)
        if info.meaningful:
            if self.first_at is None:
                self.first_at = time.monotonic()
            await self.ensure_started()
            if held:
                out.extend(held)
                held.clear()
            if info.content:
                self.cs.committed = True
        (out if self.cs.started else held).append(raw)
        a.forwarded = a.forwarded or self.cs.started
        return False

    def _block(self, kind: str, obj: dict[str, Any], raw: bytes, a: _Attempt, out: list[bytes]) -> bytes:
        index = obj.get("index")
        if not isinstance(index, int):
            return raw
        if kind == "content_block_start":
            a.open_index = index
            a.max_index = max(a.max_index, index)
        elif kind == "content_block_stop" and a.open_index == index:
            a.open_index = None
        if not a.offset and a.pending_close is None:
            return raw
        # Continuing an earlier attempt's stream: close the block it left open, shift our indices.
        if a.pending_close is not None:
            out.append(_block_stop(a.pending_close))
            a.pending_close = None
        obj["index"] = index + a.offset
        return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(obj) + b"\n\n"

    async def _finish(self, stop: bytes, a: _Attempt, held: list[bytes], out: list[bytes]) -> None:
        await self.ensure_started()
        self.cs.committed = True
        out.extend(held)
        held.clear()
        delta = a.delta if a.delta is not None else {"type": "message_delta", "delta": {}, "usage": {}}
        self.usage = an.normalized_usage(a.start_usage, delta.get("usage"))
        self.state.add_usage(
            self.route_key, self.usage
        )  # cost (SPEC §14), before the metadata that carries it
        if self.aggregator:  # read only: the bytes stay as sent
            self.routing = find_routing(delta) or self.routing
        out.append(an.with_metadata(delta, self.state.metadata()))
        out.append(stop)

    def hand_over(self, a: _Attempt) -> None:
        """What a next attempt continues from, when this one sent anything and then failed."""
        if not a.forwarded:
            return
        cs = self.cs
        cs.preamble_sent = True
        if a.max_index >= 0:
            cs.next_index = a.offset + a.max_index + 1
            cs.open_index = a.offset + a.open_index if a.open_index is not None else None
        if a.pending_close is not None:  # ours never opened a block: the old one is still open
            cs.open_index = a.pending_close

    def error_event(self, message: str, type: str = "api_error", status: int = 502) -> bytes:
        return an.stream_error_event(message, an.error_type_for(type, status))


def _block_stop(index: int) -> bytes:
    return (
        b'event: content_block_stop\ndata: {"type":"content_block_stop","index":'
        + str(index).encode()
        + b"}\n\n"
    )


def _failure(error: Any) -> AttemptFailure:
    message = error.get("message") if isinstance(error, dict) else None
    if not isinstance(message, str):
        message = orjson.dumps(error).decode()
    return AttemptFailure(in_stream_failure_kind(message), f"upstream error in stream: {message}")
