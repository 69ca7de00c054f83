"""Small raw-ASGI helpers for the hot path.

The client API endpoints are plain ASGI callables rather than Starlette endpoints: they skip the
Request/Response objects and middleware stack on every call (measured in bench/RESULTS.md). Everything
that is not on the hot path (admin API, dashboard) uses Starlette.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import orjson

from modelpool.protocols.errors import ClientError

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def header_map(scope: Scope) -> dict[str, str]:
    """Request headers, lower-cased names (ASGI already lower-cases them); latin-1 per HTTP."""
    return {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}


async def read_body(receive: Receive, headers: dict[str, str], max_body: int) -> bytes:
    length = headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > max_body:
        raise ClientError(
            413,
            f"request body of {length} bytes exceeds max_body ({max_body} bytes)",
            type="request_too_large",
        )
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise asyncio.CancelledError("client disconnected while sending the request")
        chunk = message.get("body", b"")
        if chunk:
            size += len(chunk)
            if size > max_body:
                raise ClientError(
                    413, f"request body exceeds max_body ({max_body} bytes)", type="request_too_large"
                )
            chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


async def send_bytes(
    send: Send,
    status: int,
    body: bytes,
    headers: list[tuple[bytes, bytes]] | None = None,
    content_type: bytes = b"application/json",
) -> None:
    hdrs = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    if headers:
        hdrs.extend(headers)
    await send({"type": "http.response.start", "status": status, "headers": hdrs})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def send_json(
    send: Send, status: int, obj: Any, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    await send_bytes(send, status, orjson.dumps(obj), headers)


class DisconnectWatch:
    """Cancels the handling task when the client goes away, so the walk stops and the upstream closes.

    uvicorn silently drops writes to a closed connection, so without this a walk would keep reading
    (and paying for) an answer nobody receives.

    The watching task starts only once the call has lasted `DELAY`: most non-streamed calls are over by
    then, and a timer armed and cancelled costs a fraction of a task started, stepped and cancelled
    (~13 µs of CPU per call, bench/RESULTS.md). A client that leaves earlier is noticed at `DELAY`.
    """

    DELAY = 0.05

    __slots__ = ("_done", "_receive", "_start", "_task", "_watcher", "disconnected")

    def __init__(self, receive: Receive) -> None:
        self._receive = receive
        self._task = asyncio.current_task()
        self._done = False
        self.disconnected = False
        self._watcher: asyncio.Task[None] | None = None
        self._start: asyncio.TimerHandle | None = asyncio.get_running_loop().call_later(
            self.DELAY, self._begin
        )

    def _begin(self) -> None:
        self._start = None
        if not self._done:
            self._watcher = asyncio.create_task(self._watch())

    async def _watch(self) -> None:
        while True:
            message = await self._receive()
            if message["type"] == "http.disconnect":
                if not self._done and self._task is not None:
                    self.disconnected = True
                    self._task.cancel()
                return

    def finish(self) -> None:
        """Call before the last send: a completed response must not look like a disconnect."""
        self._done = True
        if self._start is not None:
            self._start.cancel()
            self._start = None
        if self._watcher is not None:
            # Let go of it: the task refers to this watch through its coroutine, a cycle otherwise left to
            # the garbage collector with everything the call built (issue #29).
            self._watcher.cancel()
            self._watcher = None
