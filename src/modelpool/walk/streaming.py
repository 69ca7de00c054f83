"""What both stream relays (byte-faithful and translating) do the same way with an upstream response."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp

from modelpool.health.classify import FailureKind, classify
from modelpool.upstream.client import AttemptFailure
from modelpool.walk.walker import AttemptResult

DRAIN_TIMEOUT = 0.25


async def read_chunk(reader: aiohttp.StreamReader, deadline: float | None, idle: float) -> bytes:
    """The next upstream read; before the first meaningful event it must come by `deadline` (a stall is a
    `network` failure and switches), after it within `idle` seconds. Measured only while the relay waits
    for the upstream, so a client that reads slowly never makes a flowing upstream look idle."""
    try:
        if deadline is None:
            async with asyncio.timeout(idle):
                return await reader.readany()
        async with asyncio.timeout_at(deadline):
            return await reader.readany()
    except TimeoutError:
        if deadline is None:
            raise AttemptFailure(FailureKind.NETWORK, f"stall: no upstream data for {idle:g} s") from None
        raise AttemptFailure(
            FailureKind.NETWORK, "stall: no upstream event before the first-byte timeout"
        ) from None
    except (aiohttp.ClientError, ConnectionError) as exc:
        raise AttemptFailure(FailureKind.NETWORK, f"stream broken: {type(exc).__name__}: {exc}") from None


async def drain(resp: aiohttp.ClientResponse) -> None:
    """After the terminator, read the (usually empty) rest of the body so the connection goes back to the
    pool. Closing instead would throw the connection away whenever the chunked-encoding end marker had not
    arrived yet — a new TCP/TLS handshake on the next call. A body that does not end promptly is closed."""
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
