"""Native relay of Gemini streams (`:streamGenerateContent?alt=sse`): a Gemini client on a Gemini route.

Each event is a whole `GenerateContentResponse`; there is no terminator: the event with a `finishReason`
ends the reply (it carries `usageMetadata` too), and the `modelpool` metadata is written into it as its
last field. Events before the first reasoning or answer part are held (a route that dies first leaves no
trace); after the commit point a read holding no final or error event goes out as bytes, unparsed.
Gemini events carry no indices, so a later attempt simply continues the client's stream.
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from modelpool import fastscan
from modelpool.protocols.gemini import events
from modelpool.protocols.gemini.wire import stream_error_event, usage_from_gemini
from modelpool.protocols.sse import SSEEvent
from modelpool.relays.native import NativeStream, plain_run
from modelpool.relays.reads import in_stream_failure_kind
from modelpool.upstream.client import AttemptFailure


class GeminiStream(NativeStream):
    UNTERMINATED = "upstream stream ended without a finishReason"

    def reported_usage(self) -> dict[str, int] | None:
        # Every Gemini event says the prompt's size (the last one the whole usage): read when asked.
        return usage_from_gemini(self.usage) if self.usage is not None else None

    def plain_end(self, data: bytes, pos: int, a: Any) -> int:
        if b"\r" in data:  # Google frames events with CRLF: a run of them goes out as it came
            return crlf_run(data, pos, events.SPECIAL)
        return plain_run(data, pos, events.SPECIAL)

    async def _on_event(self, ev: SSEEvent, a: Any, held: list[bytes], out: list[bytes]) -> bool:
        if not ev.data:
            return False
        info = events.inspect(ev.data)
        if info.error is not None:
            raise _failure(info.error)
        if info.usage is not None:
            self.usage = info.usage
        if info.meaningful and self.first_at is None:
            self.first_at = time.monotonic()
        if info.final:
            await self.ensure_started()
            self.cs.committed = True
            out.extend(held)
            held.clear()
            self.state.add_usage(None, usage_from_gemini(self.usage))  # cost, before the metadata
            out.append(with_metadata(ev.raw, self.state.metadata()))
            return True
        if info.meaningful:
            await self.ensure_started()
            if held:
                out.extend(held)
                held.clear()
            if info.content:
                self.cs.committed = True
        (out if self.cs.started else held).append(ev.raw)
        return False

    def error_event(self, message: str, type: str = "api_error", status: int = 502) -> bytes:
        return stream_error_event(message, type, status)


def crlf_run(data: bytes, pos: int, specials: tuple[bytes, ...]) -> int:
    """`native.plain_run` for CRLF-framed events: where the run of whole events with none of `specials`
    ends (`pos` if none). Forwarded as they came, CRLF included: no copy to normalize the framing (the
    events the parser reads go out normalized to LF, which every SSE client reads the same)."""
    return fastscan.plain_run(data, pos, specials, b"\r\n\r\n")


def with_metadata(raw: bytes, meta: dict[str, Any]) -> bytes:
    """The final event with `"modelpool": {…}` spliced in before its closing brace (bytes otherwise as
    they came)."""
    end = raw.rstrip()
    if not end.endswith(b"}"):
        return raw
    return end[:-1] + b',"modelpool":' + orjson.dumps(meta) + b"}\n\n"


def _failure(error: Any) -> AttemptFailure:
    message = error.get("message") if isinstance(error, dict) else None
    if not isinstance(message, str):
        message = orjson.dumps(error).decode()
    return AttemptFailure(in_stream_failure_kind(message), f"upstream error in stream: {message}")
