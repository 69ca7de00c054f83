"""What both stream relays (byte-faithful and translating) do the same way with an upstream response."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp

from modelpool.health.classify import FailureKind, classify
from modelpool.upstream.client import AttemptFailure
from modelpool.upstream.http1 import BodyReader, Response
from modelpool.walk.walker import AttemptResult

DRAIN_TIMEOUT = 0.25


class UpstreamReads:
    """Reads of one upstream stream with stall detection: before the first meaningful event the next read
    must come by `first_deadline` (a stall is a `network` failure and switches), after it within `idle`
    seconds. Measured only while the relay waits for the upstream, so a client that reads slowly never
    makes a flowing upstream look idle.

    One watchdog timer per quiet period instead of an `asyncio.timeout` per read: a timer per read cost
    ~6 µs (a timer handle armed and cancelled each time), a tenth of a relayed chunk's CPU with streams
    that arrive one token per read. The watchdog fires, looks at how long the current read has waited,
    and either re-arms for the rest or cancels the read.
    """

    __slots__ = (
        "_armed_for",
        "_before_first",
        "_fired",
        "_handle",
        "_loop",
        "_task",
        "_waiting_since",
        "first_byte",
        "first_deadline",
        "idle",
        "reader",
    )

    def __init__(
        self, reader: BodyReader, first_deadline: float, idle: float, first_byte: float = 0.0
    ) -> None:
        self.reader = reader
        self.first_deadline = first_deadline
        self.first_byte = first_byte  # the limit the deadline came from, named when it fires
        self.idle = idle
        self._loop = asyncio.get_running_loop()
        self._task: asyncio.Task[Any] | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._waiting_since: float | None = None
        self._before_first = True
        self._fired: str | None = None
        self._armed_for = 0.0

    @classmethod
    def start(cls, reader: BodyReader, timeouts: Any) -> UpstreamReads:
        """The reads of a response whose headers just arrived: the first-byte clock starts now."""
        limit = timeouts.first_byte
        return cls(reader, asyncio.get_running_loop().time() + limit, timeouts.idle, limit)

    async def read(self, before_first: bool) -> bytes:
        self._before_first = before_first
        now = self._waiting_since = self._loop.time()
        due = self.first_deadline if before_first else now + self.idle  # `_due`, inlined: once per chunk
        # Re-arm only when the watchdog would fire too late (the first-byte deadline still armed after the
        # first event, with a shorter `idle`); firing too early is cheap: it re-arms for the rest.
        if self._handle is None or due < self._armed_for:
            if self._handle is not None:
                self._handle.cancel()
            self._task = asyncio.current_task()
            self._arm(due)
        try:
            return await self.reader.readany()
        except asyncio.CancelledError:
            task = self._task
            if self._fired is None or task is None or task.uncancel() > 0:
                raise  # a real cancellation (client gone, walk cancelled), not our stall timer
            raise AttemptFailure(FailureKind.NETWORK, self._fired) from None
        except (aiohttp.ClientError, ConnectionError) as exc:
            raise AttemptFailure(FailureKind.NETWORK, f"stream broken: {type(exc).__name__}: {exc}") from None
        finally:
            self._waiting_since = None

    def close(self) -> None:
        """Stop the watchdog (the stream ended or failed); idempotent."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _arm(self, when: float) -> None:
        self._armed_for = when
        self._handle = self._loop.call_at(when, self._check)

    def _due(self, since: float) -> float:
        return self.first_deadline if self._before_first else since + self.idle

    def _check(self) -> None:
        self._handle = None
        since = self._waiting_since
        if since is None or self._task is None:
            return  # not waiting on the upstream now: the next read arms a new watchdog
        due = self._due(since)
        if self._loop.time() + 0.001 < due:
            self._arm(due)
            return
        # Each names the limit in force on this route (SPEC §3.9: it may be the route's own).
        if self._before_first:
            self._fired = f"stall: no upstream event within the first-byte limit of {self.first_byte:g} s"
        else:
            self._fired = f"stall: no upstream data for {self.idle:g} s"
        self._task.cancel()


async def read_body(resp: Response, idle: float) -> bytes:
    """A non-streamed answer's body once its headers arrived. The wait for the headers (the provider
    generating the answer) is bounded by `response` only; after them the body flows, so a gap longer than
    `idle` between two reads is a stall (`network`) — without this a body stalled mid-way held the call
    for the whole `response` timeout (found by the soak: two such attempts outlived the client's deadline).

    Most bodies arrive in the same packets as their headers: then there is nothing to wait for and no
    watchdog is armed (a timer armed and cancelled per call, measured in bench/RESULTS.md)."""
    content = resp.content
    if content.is_eof():
        return content.read_nowait(-1)
    reads = UpstreamReads(content, 0.0, idle)
    parts: list[bytes] = []
    try:
        while chunk := await reads.read(before_first=False):
            parts.append(chunk)
    finally:
        reads.close()
    return parts[0] if len(parts) == 1 else b"".join(parts)


async def drain(resp: Response) -> None:
    """After the terminator, read the (usually empty) rest of the body so the connection goes back to the
    pool. Closing instead would throw the connection away whenever the chunked-encoding end marker had not
    arrived yet — a new TCP/TLS handshake on the next call. A body that does not end promptly is closed."""
    content = resp.content
    if content.is_eof():  # the usual case: the end marker came with the terminator, no timer to arm
        content.read_nowait(-1)
        resp.release()
        return
    try:
        async with asyncio.timeout(DRAIN_TIMEOUT):
            while await resp.content.readany():
                pass
    except (TimeoutError, aiohttp.ClientError, ConnectionError):
        resp.close()
        return
    resp.release()


def in_stream_failure_kind(message: str) -> FailureKind:
    kind = classify(None, message)
    # An error inside a 200 stream is the route's failure, not the request's: `server` unless its text says
    # quota/auth/… (docs/decisions.md). A malformed chunk is too — as a non-JSON 200 body is for a
    # non-streamed call; it used to be `unclassified` in a stream and `server` without one.
    if kind in (FailureKind.REQUEST, FailureKind.UNCLASSIFIED):
        return FailureKind.SERVER
    return kind


def stream_result(t0: float, first_at: float | None, usage: Any) -> AttemptResult:
    """TTFT (to the first reasoning/answer event) and tokens/s after it, for the health registry."""
    ttft = (first_at - t0) if first_at is not None else None
    tps = None
    if first_at is not None and isinstance(usage, dict):
        tokens = usage.get("completion_tokens")
        elapsed = time.monotonic() - first_at
        if isinstance(tokens, int) and tokens > 1 and elapsed > 0:
            tps = tokens / elapsed
    return AttemptResult(ttft=ttft, tokens_per_s=tps)
