"""What every native stream relay does the same way: open the attempt, pump its reads, end it cleanly.

A native relay (SPEC §1.6) passes the upstream's bytes to the client as they came and only *reads* them:
for the commit point, the final event (which carries the `modelpool` metadata), usage and the aggregator's
routing record. Each dialect's relay (`openai_chat`, `anthropic`, `responses`) implements `_relay`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from modelpool import fastscan
from modelpool.aggregators import RoutingRecord
from modelpool.health.classify import FailureKind
from modelpool.protocols.sse import SSEEvent, SSEParser
from modelpool.relays.client_stream import ClientStream
from modelpool.relays.reads import UpstreamReads, drain, stream_result
from modelpool.relays.request import Prepared
from modelpool.routing.call import Call, Candidate
from modelpool.signers import SignatureScan
from modelpool.upstream.client import AttemptFailure, UpstreamClient
from modelpool.upstream.http1 import Response
from modelpool.walk.walker import AttemptResult, CommittedFailure, WalkState

Emit = Callable[[bytes], Awaitable[None]]
Start = Callable[[int, list[tuple[bytes, bytes]]], Awaitable[None]]

SSE_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]


def plain_run(data: bytes, pos: int, specials: tuple[bytes, ...]) -> int:
    """Where the run of whole events from `pos` in which none of `specials` occurs ends (`pos` if none).

    After the commit point a native relay forwards such a run as it came, without an event object or a
    JSON parse per event: with a burst reply (the whole answer in one read, its terminator included) that
    is every delta, and only the tail (the final event, the terminator) takes the event path. `data` is
    whole `\n`-framed events (`sse.Events`) and `pos` an event's start. One search per special over the
    read, not a loop per event: the run ends at the last event boundary before the first special, if its
    braces balance — a cheap screen for a truncated (malformed) event before bytes go out unparsed (answer
    text with an odd brace fails it too: those events take the event path, slower, never wrong)."""
    return fastscan.plain_run(data, pos, specials, b"\n\n")


async def open_stream(client: UpstreamClient, prep: Prepared) -> Response:
    """POST a streamed attempt; its response once the headers arrived (bounded by `first_byte`)."""
    limits = prep.timeouts or client.timeouts  # the route's own (SPEC §3.9), resolved per runtime
    try:
        async with asyncio.timeout(limits.first_byte):
            return await client.post(
                prep.url, prep.headers, prep.body, route=prep.route, connect=limits.connect
            )
    except TimeoutError:
        message = f"timeout: no upstream response within the first-byte limit of {limits.first_byte:g} s"
        raise AttemptFailure(FailureKind.NETWORK, message) from None


class NativeStream:
    """One instance per client call and dialect; `attempt` is called once per native upstream attempt."""

    def __init__(
        self, call: Call, client: UpstreamClient, state: WalkState, cs: ClientStream, start: Start, emit: Emit
    ) -> None:
        self.call = call
        self.client = client
        self.state = state
        self.cs = cs
        self._start = start
        self._emit = emit
        self.routing: RoutingRecord | None = None
        self.usage: Any = None
        # Usage the current attempt reported before its end (Anthropic's message_start: the input): what
        # a hedge loser cancelled mid-stream is billed for (SPEC §3.7, §14).
        self.partial_usage: dict[str, int] | None = None
        self.route_key: str | None = None
        self.aggregator = False  # the current attempt's route writes routing records
        self.first_at: float | None = None  # the current attempt's first reasoning/answer event
        self._scan = SignatureScan("", call.signed)
        self.limits: Any = None  # the current attempt's route's time limits (SPEC §3.9)

    @property
    def started(self) -> bool:
        return self.cs.started

    def reported_usage(self) -> dict[str, int] | None:
        """What the current attempt's upstream reported of its usage so far (a hedge loser is billed for
        it, SPEC §3.7, §14)."""
        return self.partial_usage

    @property
    def committed(self) -> bool:
        return self.cs.committed

    async def attempt(self, cand: Candidate, prep: Prepared) -> AttemptResult:
        t0 = time.monotonic()
        self.route_key = cand.key  # usage is priced at this route's (a hedge winner may end before its claim)
        self.aggregator = cand.endpoint.aggregator
        self.state.effort = prep.effort
        self._scan = SignatureScan(cand.key, self.call.signed)  # SPEC §3.10: who signed what
        self.limits = prep.timeouts
        resp = await self._open(prep)
        try:
            result = await self._relay(resp, t0)
        except AttemptFailure as failure:
            resp.close()
            if self.cs.committed:
                await self._emit(self.error_event(cand.endpoint.redact(failure.message)))
                raise CommittedFailure(failure) from None
            raise
        except BaseException:
            resp.close()  # closes the connection at once: a cancelled call stops the upstream too
            raise
        await drain(resp)
        return result

    async def _open(self, prep: Prepared) -> Response:
        return await open_stream(self.client, prep)

    # ---- the pump every dialect shares; the hooks below are the dialect's ---------------------------

    UNTERMINATED = "upstream stream ended without its terminator"

    async def _relay(self, resp: Response, t0: float) -> AttemptResult:
        """Read the upstream, pass events on (held, parsed or as bytes), until the dialect's terminator.
        Everything one upstream read yields goes out in one write (a socket write per event cost more CPU
        than the rest of the relay, bench/RESULTS.md)."""
        a = self.begin()
        parser = SSEParser()
        held: list[bytes] = []  # markup before the first reasoning/answer event
        out: list[bytes] = []
        self.first_at = None
        reads = UpstreamReads.start(resp.content, self.limits or self.client.timeouts)
        try:
            while True:
                data = await reads.read(before_first=self.first_at is None)
                self._scan.feed(data)
                if not data:
                    for last in parser.close():
                        if await self._on_event(last, a, held, out):
                            self.cs.complete()
                            return stream_result(t0, self.first_at, self.usage)
                    raise AttemptFailure(FailureKind.NETWORK, self.UNTERMINATED)
                if self.passing(a) and not parser.pending:
                    # After the commit point the read's run of plain events is found once, here: the usual
                    # read at model speed is nothing else and goes out whole; a burst read's run goes
                    # ahead of its tail, which alone is parsed (not scanned again by the loop below).
                    end = self.plain_end(data, 0, a)
                    if end == len(data):
                        await self._emit(self.outgoing(data))
                        continue
                    if end:
                        out.append(data[:end])
                        data = data[end:]
                events = parser.feed_lazy(data)
                while True:
                    if self.passing(a):  # after the commit point a run of plain events goes as it came
                        end = self.plain_end(events.data, events.pos, a)
                        if end > events.pos:
                            out.append(events.take(end))
                    ev = events.next()
                    if ev is None:
                        break
                    if await self._on_event(ev, a, held, out):
                        self.cs.complete()  # before the terminator goes out (ClientStream.on_complete)
                        return stream_result(t0, self.first_at, self.usage)
                await self.flush(out)
        finally:
            reads.close()
            await self.flush(out)  # what arrived before a failure still reaches the client
            self.hand_over(a)

    def begin(self) -> Any:
        """The attempt's own bookkeeping (passed to every hook)."""
        return None

    def passing(self, a: Any) -> bool:
        """Whether plain events may go out as bytes now (after the commit point, nothing to rewrite)."""
        return self.cs.committed

    def plain_end(self, data: bytes, pos: int, a: Any) -> int:
        """Where the run of plain whole events from `pos` ends (`pos`: none)."""
        raise NotImplementedError

    async def _on_event(self, ev: SSEEvent, a: Any, held: list[bytes], out: list[bytes]) -> bool:
        """One parsed event; True at the terminator (the reply is complete)."""
        raise NotImplementedError

    def hand_over(self, a: Any) -> None:
        """What a next attempt continues from, when this one sent anything and then failed."""
        return None

    def error_event(self, message: str, type: str = "api_error", status: int = 502) -> bytes:
        """The dialect's in-stream error event (no success terminator follows it)."""
        raise NotImplementedError

    async def ensure_started(self) -> None:
        if not self.cs.started:
            self.cs.started = True
            await self._start(200, SSE_HEADERS + self.state.headers())

    def outgoing(self, data: bytes) -> bytes:
        """What of a write's bytes the client gets (a dialect may take out what it added upstream)."""
        return data

    async def flush(self, out: list[bytes]) -> None:
        if out:
            data = out[0] if len(out) == 1 else b"".join(out)
            out.clear()
            await self._emit(self.outgoing(data))
