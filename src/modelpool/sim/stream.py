"""Sending a rendered reply over HTTP: token pacing, and the stream faults (cut, stall, malformed, …).

Renderers (OpenAI, Anthropic) turn a `Plan` into a `Script` of pre-encoded byte frames; this module
only decides *when* each frame goes out and where a scripted fault interrupts the sequence.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import socket
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import orjson
from aiohttp import web

from modelpool.sim.errors import Dialect, SimError, stream_error
from modelpool.sim.plan import Speed
from modelpool.sim.spec import Fault

SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"}

# Below this a sleep costs more than it paces: tokens that fall due meanwhile go out in one write.
_MIN_SLEEP = 0.005

STREAM_FAULTS = frozenset({"cut", "stall", "malformed", "no_terminator", "error_event", "trickle"})


@dataclass(slots=True)
class Script:
    head: bytes  # sent right after the headers (role chunk / message_start + ping)
    reasoning: list[bytes]  # one frame per reasoning token
    content: list[bytes]  # one frame per answer token or tool-call fragment
    tail: bytes  # finish (+ usage) frames
    terminator: bytes  # `[DONE]` / `message_stop`
    malformed: bytes  # a frame whose data is not JSON
    render_error: Callable[[SimError], bytes]  # a mid-stream error frame in the dialect
    # The same, knowing how many content frames went out (Responses numbers its events).
    error_at: Callable[[SimError, int], bytes] | None = None


class Pacer:
    """Emits frames at `tps`, batching whatever fell due while asleep (sleep granularity ≫ 1/tps at speed)."""

    def __init__(self, tps: float) -> None:
        self.tps = tps
        self.sent = 0
        self._t0: float | None = None

    def rebase(self) -> None:
        """After a stall, pace from now instead of bursting the backlog."""
        self._t0 = None

    async def send(
        self, resp: web.StreamResponse, frames: Sequence[bytes], progress: list[int] | None = None
    ) -> None:
        """`progress[0]` counts the frames written so far, kept current if the client hangs up mid-way."""
        if not frames:
            return
        if math.isinf(self.tps):
            await resp.write(b"".join(frames))
            self.sent += len(frames)
            if progress is not None:
                progress[0] += len(frames)
            return
        loop = asyncio.get_running_loop()
        if self._t0 is None:
            # Origin chosen so the next frame is due right now.
            self._t0 = loop.time() - (self.sent + 1) / self.tps
        i = 0
        while i < len(frames):
            elapsed = loop.time() - self._t0
            due = int(elapsed * self.tps) - self.sent
            if due <= 0:
                await asyncio.sleep(max(_MIN_SLEEP, (self.sent + 1) / self.tps - elapsed))
                continue
            j = min(len(frames), i + due)
            await resp.write(b"".join(frames[i:j]))
            self.sent += j - i
            if progress is not None:
                progress[0] += j - i
            i = j


async def stall(delay: float) -> None:
    """Go silent for `delay` seconds, or until cancelled (client hang-up / server stop) when 0."""
    if delay > 0:
        await asyncio.sleep(delay)
    else:
        await asyncio.Event().wait()


def abort(request: web.BaseRequest) -> None:
    """Drop the TCP connection without a proper end: a reset (RST, linger 0), as a crashed or aborting
    server sends, not the close (FIN) of a server that is done with an idle connection — a client tells
    the two apart (a kept-alive connection closed before its answer is sent again, a reset never)."""
    transport = request.transport
    if transport is not None:
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()


async def drive(
    request: web.BaseRequest,
    script: Script,
    speed: Speed,
    fault: Fault | None,
    progress: list[int] | None = None,
    end_delay: float = 0.0,
    extra_headers: dict[str, str] | None = None,
) -> tuple[web.StreamResponse, int]:
    """Stream `script`; returns the response and the number of content frames sent (for the call record).
    `progress[0]` counts the content frames written as they go, for a call the client cut short.
    `end_delay` holds the body's end back after the terminator (`SimProvider.end_delay`)."""
    progress = [0] if progress is None else progress
    resp = web.StreamResponse(
        status=200, headers={**SSE_HEADERS, **extra_headers} if extra_headers else SSE_HEADERS
    )
    await resp.prepare(request)
    if fault is None and speed.ttft == 0 and math.isinf(speed.tps) and not speed.reasoning_pace:
        # Fast mode: the whole reply in one write.
        await resp.write(
            b"".join((script.head, *script.reasoning, *script.content, script.tail, script.terminator))
        )
        if end_delay > 0:
            await asyncio.sleep(end_delay)
        await resp.write_eof()
        return resp, len(script.content)
    await resp.write(script.head)
    if speed.ttft > 0:
        await asyncio.sleep(speed.ttft)
    pacer = Pacer(speed.tps)
    if speed.reasoning_pace:  # a model thinking at its own pace: one reasoning event per `pace` seconds
        await Pacer(1.0 / speed.reasoning_pace).send(resp, script.reasoning)
    else:
        await pacer.send(resp, script.reasoning)
    if fault is None or fault.kind not in STREAM_FAULTS:
        fault = None
    kind = fault.kind if fault is not None else None
    split = len(script.content) if fault is None else min(max(0, fault.after_tokens), len(script.content))
    await pacer.send(resp, script.content[:split], progress)
    if fault is not None and kind != "no_terminator":
        if kind != "stall" and fault.delay > 0:
            await asyncio.sleep(fault.delay)
        if kind == "cut":
            abort(request)
            return resp, split
        if kind == "error_event":
            err = stream_error(fault)
            await resp.write(script.error_at(err, split) if script.error_at else script.render_error(err))
            await resp.write_eof()
            return resp, split
        if kind == "stall":
            await stall(fault.delay)
            pacer.rebase()
        elif kind == "malformed":
            await resp.write(script.malformed)
        elif kind == "trickle":
            pacer = Pacer(1.0 / fault.delay if fault.delay > 0 else math.inf)
    await pacer.send(resp, script.content[split:], progress)
    await resp.write(script.tail if kind == "no_terminator" else script.tail + script.terminator)
    if end_delay > 0:
        await asyncio.sleep(end_delay)
    await resp.write_eof()
    return resp, len(script.content)


async def send_body(
    request: web.BaseRequest,
    body: bytes,
    fault: Fault | None,
    dialect: Dialect,
    tokens: int = 0,
    extra_headers: dict[str, str] | None = None,
) -> web.StreamResponse:
    """A non-streamed reply, with the stream faults' nearest non-stream equivalents. `tokens` is the
    answer's length (a trickle holds the body back as long as streaming it would take)."""
    kind = fault.kind if fault is not None else None
    if kind == "trickle" and fault is not None:
        await asyncio.sleep(fault.delay * max(0, tokens - fault.after_tokens))
    if fault is not None and kind in ("cut", "malformed", "error_event") and fault.delay > 0:
        await asyncio.sleep(fault.delay)
    if kind == "stall" and fault is not None and (fault.headers or fault.after_tokens > 0):
        # Headers and the first half of the body, then silence: a body that stops flowing mid-way.
        resp = web.StreamResponse(
            status=200, headers={"Content-Type": "application/json", **(extra_headers or {})}
        )
        resp.content_length = len(body)
        await resp.prepare(request)
        await resp.write(body[: len(body) // 2])
        await stall(fault.delay)
        await resp.write(body[len(body) // 2 :])
        await resp.write_eof()
        return resp
    if kind == "stall" and fault is not None:
        await stall(fault.delay)
    elif kind == "cut":
        # Announce the full length, send half, drop the connection: an incomplete body.
        resp = web.StreamResponse(
            status=200, headers={"Content-Type": "application/json", **(extra_headers or {})}
        )
        resp.content_length = len(body)
        await resp.prepare(request)
        await resp.write(body[: len(body) // 2])
        abort(request)
        return resp
    elif kind == "malformed":
        body = body[: len(body) // 2] + b"<!-- upstream garbage"
    elif kind == "error_event" and fault is not None:
        # Some providers answer 200 with an error object; that is the non-stream twin of a mid-stream error.
        err = stream_error(fault)
        body = orjson.dumps(err.anthropic_body() if dialect == "anthropic" else err.openai_body())
    return web.Response(status=200, body=body, content_type="application/json", headers=extra_headers)
