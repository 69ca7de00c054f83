"""Relay of OpenAI Chat Completions from an OpenAI-compatible route to an OpenAI client (SPEC §4).

Bytes go out as they arrive. The relay holds back only two kinds of event: pure markup before the
first reasoning/answer event (so a route that dies right after its role chunk leaves no trace and the
response headers name the route that really answers), and the final chunk(s), which wait for `[DONE]`
so the `modelpool` metadata can ride on the last one. Answer text is never held.

Every call is counted (SPEC §14): when the client did not ask for usage the request asked the route for it
(`Prepared.usage_added`), and this relay gives the client the stream it would have had without it — the
usage-only chunk left out, each chunk's `"usage":null` taken out of the bytes (one C pass per write,
`fastscan`) — while the usage goes to the books. It also counts the bytes it passed, the estimate of the
output when a route ignores `include_usage` (`output_estimate`).
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from modelpool import fastscan
from modelpool.aggregators import find_routing
from modelpool.protocols import openai_chat as oc
from modelpool.protocols.mapping import usage_from_openai
from modelpool.protocols.sse import SSEEvent
from modelpool.relays.native import NativeStream
from modelpool.relays.reads import in_stream_failure_kind
from modelpool.relays.request import Prepared
from modelpool.routing.call import Candidate
from modelpool.upstream.client import AttemptFailure
from modelpool.walk.walker import AttemptResult

# What include_usage makes a route write into every chunk (OpenAI: compact; JSON with spaces elsewhere).
_USAGE_NULLS = (b',"usage":null', b', "usage": null')


class OpenAIStreamRelay(NativeStream):
    """OpenAI Chat Completions from a route that speaks it, to an OpenAI client: bytes as they came."""

    UNTERMINATED = "upstream stream ended without [DONE]"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._added = False  # this attempt asked the route for usage the client did not ask for
        self._null: bytes | None = None  # how this route writes `"usage":null`, b"" if it does not
        self.sent = 0  # bytes passed while `_added`, and the size of the first content chunk: together
        self._chunk = 0  # the output estimate when the route sends no usage after all

    async def attempt(self, cand: Candidate, prep: Prepared) -> AttemptResult:
        self._added = prep.usage_added
        self._null, self.sent, self._chunk = None, 0, 0  # each route writes its own way
        return await super().attempt(cand, prep)

    def outgoing(self, data: bytes) -> bytes:
        """The client's bytes without the `"usage":null` its request did not ask for: one C pass
        (`fastscan`) per write, nothing per chunk in Python."""
        if not self._added:
            return data
        null = self._null
        if null is None:  # how this route writes it, from its first bytes: compact (OpenAI), spaced, or not
            null = self._null = next((n for n in _USAGE_NULLS if n in data), b"")
        self.sent += len(data)
        return fastscan.remove_all(data, null) if null else data

    def output_estimate(self) -> int:
        """Output tokens when the route reported none: the bytes relayed over the size of one content
        chunk (about one token each)."""
        return self.sent // self._chunk if self._chunk else 0

    def begin(self) -> list[oc.ChunkInfo]:
        return []  # final/usage chunks waiting for [DONE]

    def plain_end(self, data: bytes, pos: int, a: Any) -> int:
        return oc.plain_prefix(data, pos)

    async def _on_event(
        self, ev: SSEEvent, tail: list[oc.ChunkInfo], held: list[bytes], out: list[bytes]
    ) -> bool:
        """One event the whole-run path did not take; True at `[DONE]` (the reply is complete)."""
        if ev.is_done:
            await self._finish(held, tail, out)
            return True
        if self.cs.committed and any(m in ev.data for m in oc.NOT_FINAL_MARKERS):
            out.append(ev.raw)  # e.g. the spaced marker: still no JSON parse after the commit point
            return False
        info = oc.inspect(ev.data)
        if info.error is not None:
            raise self._stream_failure(info.error)
        if info.final and not info.content:
            tail.append(info)
            return False
        if info.meaningful and self.first_at is None:
            self.first_at = time.monotonic()
        await self._forward(ev.raw, info, held, out)
        return False

    async def _forward(self, raw: bytes, info: oc.ChunkInfo, held: list[bytes], out: list[bytes]) -> None:
        if not info.meaningful:
            (out if self.cs.started else held).append(raw)
            return
        await self.ensure_started()
        if held:
            out.extend(held)
            held.clear()
        if info.content and not self.cs.committed:
            self.cs.committed = True
            self._chunk = len(raw)
            notice = self.state.notice()
            if notice is not None:
                out.append(oc.content_chunk(info.obj, notice))
        out.append(raw)

    async def _finish(self, held: list[bytes], tail: list[oc.ChunkInfo], out: list[bytes]) -> None:
        await self.ensure_started()
        self.cs.committed = True
        out.extend(held)
        self.state.add_usage(
            self.route_key, usage_from_openai(next((i.usage for i in tail if i.usage), None))
        )
        for info in tail:
            if info.usage:
                self.usage = info.usage
            if self.aggregator:  # read only: the bytes stay as sent
                self.routing = find_routing(info.obj) or self.routing
        if self._added:  # what the client did not ask for stays out of its stream
            tail = [i for i in tail if i.obj.get("choices") or not i.usage]
            for info in tail:
                if "usage" in info.obj and info.obj["usage"] is None:
                    del info.obj["usage"]
        for i, info in enumerate(tail):
            if i == len(tail) - 1:
                out.append(oc.with_metadata(info.obj, self.state.metadata()))
            else:
                out.append(b"data: " + orjson.dumps(info.obj) + b"\n\n")
        out.append(b"data: [DONE]\n\n")

    def error_event(self, message: str, type: str = "upstream_error", status: int = 502) -> bytes:
        return oc.stream_error_event(message, type)

    def _stream_failure(self, error: Any) -> AttemptFailure:
        message = error.get("message") if isinstance(error, dict) else None
        if not isinstance(message, str):
            message = orjson.dumps(error).decode()
        return AttemptFailure(in_stream_failure_kind(message), f"upstream error in stream: {message}")
