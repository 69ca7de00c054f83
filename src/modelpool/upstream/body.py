"""A response body as it arrives from the upstream socket: buffered up to `HIGH_WATER`, then the socket is
paused until the relay has read it down to `LOW_WATER` (back-pressure). The few aiohttp `StreamReader`
methods the relays call (`readany`, `read`, `is_eof`, `read_nowait`); fed by `http1.Connection`.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, Protocol

HIGH_WATER = 256 * 1024  # buffered body bytes before the socket stops being read (back-pressure)
LOW_WATER = 64 * 1024


class Pausable(Protocol):
    """The connection under a body: its socket's reading can be paused and resumed."""

    def pause(self) -> bool: ...

    def resume(self) -> None: ...


class BodyReader:
    """The response body as it arrives (buffered up to `HIGH_WATER`, then the socket is paused)."""

    __slots__ = ("_buf", "_conn", "_decoder", "_eof", "_error", "_paused", "_size", "_waiter")

    def __init__(self, conn: Pausable) -> None:
        self._conn = conn
        self._buf: deque[bytes] = deque()
        self._size = 0
        self._eof = False
        self._error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._paused = False
        self._decoder: Any = None  # zlib decompressor when the body is gzip/deflate-encoded

    # -- fed by the connection --------------------------------------------------------------------

    def _feed(self, data: bytes) -> None:
        if self._decoder is not None:
            data = self._decoder.decompress(data)
            if not data:
                return
        self._buf.append(data)
        self._size += len(data)
        if self._size > HIGH_WATER and not self._paused:
            self._paused = self._conn.pause()
        self._wake()

    def _finish(self, error: BaseException | None = None) -> None:
        if self._eof:
            return
        if error is None and self._decoder is not None:
            rest = self._decoder.flush()
            if rest:
                self._buf.append(rest)
                self._size += len(rest)
        self._eof = True
        self._error = error
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # -- read by the relays -----------------------------------------------------------------------

    def is_eof(self) -> bool:
        """The whole body arrived and was read."""
        return self._eof and not self._buf

    def read_nowait(self, n: int = -1) -> bytes:
        """What is buffered now (all of it for `n < 0`)."""
        if not self._buf:
            return b""
        data = self._buf.popleft() if len(self._buf) == 1 else b"".join(self._take_all())
        if 0 <= n < len(data):
            self._buf.appendleft(data[n:])
            data = data[:n]
        self._consumed(len(data))
        return data

    async def readany(self) -> bytes:
        """Everything that arrived since the last read (b"" at the end of the body): under load several
        socket reads pile up while the relay works, and they go on as one piece — one parse, one write to
        the client — as aiohttp's reader does."""
        while not self._buf:
            if self._eof:
                if self._error is not None:
                    raise self._error
                return b""
            await self._wait()
        return self.read_nowait(-1)

    async def read(self, n: int = -1) -> bytes:
        """Up to `n` bytes (all for `n < 0`), waiting until that many arrived or the body ended."""
        while not self._eof and (n < 0 or self._size < n):
            await self._wait()
        if self._error is not None and not self._buf:
            raise self._error
        return self.read_nowait(n)

    def _take_all(self) -> list[bytes]:
        parts = list(self._buf)
        self._buf.clear()
        return parts

    def _consumed(self, n: int) -> None:
        self._size -= n
        if self._paused and self._size < LOW_WATER:
            self._paused = False
            self._conn.resume()

    async def _wait(self) -> None:
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None
