"""The hot path's HTTP/1.1 client (`upstream.http1`) against real loopback sockets: a tiny asyncio server
per test answers with exactly the bytes each case needs (sized, chunked, until-close, gzip, malformed)."""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import Awaitable, Callable

import pytest

from modelpool.upstream.http1 import HIGH_WATER, ConnectionPool, UpstreamConnectionError

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def read_request(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
    )
    return head, await reader.readexactly(length)


async def serve(handler: Handler) -> tuple[asyncio.Server, str]:
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}/v1/chat/completions"


def sized(body: bytes, extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n%s\r\n%s" % (len(body), extra, body)


def run(coro: Awaitable[None]) -> None:
    asyncio.run(asyncio.wait_for(coro, 20))  # type: ignore[arg-type]


def test_keep_alive_reuses_one_connection_and_sends_one_well_formed_request() -> None:
    seen: list[tuple[bytes, bytes]] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while not reader.at_eof():
            try:
                seen.append(await read_request(reader))
            except asyncio.IncompleteReadError:
                return
            writer.write(sized(b'{"ok":%d}' % len(seen)))

    async def main() -> None:
        server, url = await serve(handler)
        pool = ConnectionPool()
        for i in (1, 2, 3):
            resp = await pool.request("POST", url, {"authorization": "Bearer k"}, b'{"a":1}', 5)
            assert resp.status == 200 and await resp.read() == b'{"ok":%d}' % i
            resp.close()  # after a whole body: a no-op, the connection is already pooled
        assert pool.opened == 1
        head, body = seen[0]
        assert head.startswith(b"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:")
        assert b"authorization: Bearer k\r\n" in head and b"content-length: 7\r\n" in head
        assert body == b'{"a":1}'
        await pool.close()
        server.close()

    run(main())


def test_a_chunked_stream_arrives_piece_by_piece_then_ends() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n")
        writer.write(b"content-type: text/event-stream\r\n\r\n")
        for i in range(3):
            part = b"data: %d\n\n" % i
            writer.write(b"%x\r\n%s\r\n" % (len(part), part))
            await writer.drain()
            await asyncio.sleep(0.05)
        writer.write(b"0\r\n\r\n")

    async def main() -> None:
        server, url = await serve(handler)
        pool = ConnectionPool()
        resp = await pool.request("POST", url, {}, b"{}", 5)
        assert resp.headers["Content-Type"] == "text/event-stream"
        got = []
        while piece := await resp.content.readany():
            got.append(piece)
        assert b"".join(got) == b"data: 0\n\ndata: 1\n\ndata: 2\n\n" and len(got) == 3
        assert resp.content.is_eof()
        await pool.close()
        server.close()

    run(main())


def test_until_close_and_gzip_bodies() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head, _ = await read_request(reader)
        if b"/gz" in head:
            writer.write(sized(gzip.compress(b"hello " * 100), b"content-encoding: gzip\r\n"))
            return
        writer.write(b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nuntil the end")
        await writer.drain()
        writer.close()

    async def main() -> None:
        server, url = await serve(handler)
        pool = ConnectionPool()
        resp = await pool.request("POST", url, {}, b"{}", 5)
        assert await resp.read() == b"until the end"
        resp = await pool.request("POST", url.replace("/v1/chat/completions", "/gz"), {}, b"{}", 5)
        assert await resp.read() == b"hello " * 100
        await pool.close()
        server.close()

    run(main())


def test_a_slow_reader_pauses_the_socket_and_closing_mid_body_reaches_the_upstream() -> None:
    sent: list[int] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % (64 * 1024 * 1024))
        block = b"x" * 65536
        try:
            for _ in range(1024):
                writer.write(block)
                await writer.drain()  # blocks once the client stops reading (TCP back-pressure)
                sent.append(len(block))
        except ConnectionError:
            sent.append(-1)  # the client closed: the upstream sees it

    async def main() -> None:
        server, url = await serve(handler)
        pool = ConnectionPool()
        resp = await pool.request("POST", url, {}, b"{}", 5)
        await asyncio.sleep(0.5)  # read nothing for a while
        buffered = resp.content._size
        assert buffered <= HIGH_WATER + 256 * 1024, buffered  # paused near the high-water mark
        assert sum(n for n in sent if n > 0) < 32 * 1024 * 1024  # the upstream was held back too
        first = await resp.content.readany()
        assert first
        resp.close()
        for _ in range(100):
            if sent and sent[-1] == -1:
                break
            await asyncio.sleep(0.05)
        assert sent[-1] == -1
        await pool.close()
        server.close()

    run(main())


def test_errors_are_connection_errors_and_an_idle_connection_closed_upstream_is_not_reused() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head, _ = await read_request(reader)
        if b"/bad" in head:
            writer.write(b"NOT HTTP AT ALL\r\n\r\n")
            return
        writer.write(sized(b"{}"))
        await writer.drain()
        writer.close()  # keep-alive promised, then the upstream closes the idle connection

    async def main() -> None:
        server, url = await serve(handler)
        pool = ConnectionPool()
        assert await (await pool.request("POST", url, {}, b"{}", 5)).read() == b"{}"
        await asyncio.sleep(0.2)  # the upstream's close reaches the pool
        assert await (await pool.request("POST", url, {}, b"{}", 5)).read() == b"{}"
        assert pool.opened == 2  # the closed one was skipped, not failed
        await asyncio.sleep(0.2)
        with pytest.raises(UpstreamConnectionError, match="malformed"):
            await pool.request("POST", url.replace("/v1/chat/completions", "/bad"), {}, b"{}", 5)
        with pytest.raises(UpstreamConnectionError, match="line break"):
            await pool.request("POST", url, {"x-key": "a\r\nx-injected: 1"}, b"{}", 5)
        server.close()
        await server.wait_closed()
        with pytest.raises(OSError):
            await pool.request("POST", url, {}, b"{}", 5)
        await pool.close()

    run(main())


def test_a_reused_connection_closed_before_any_answer_byte_is_sent_again_on_a_fresh_one() -> None:
    """As llama-server does: the second request on a kept-alive connection is met by a close, no byte of
    an answer. The pool sends it again, once, on a new connection (aiohttp and httpx do the same)."""
    requests: list[int] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = len(requests)
        for n in range(2):
            try:
                await read_request(reader)
            except asyncio.IncompleteReadError:
                return
            requests.append(conn)
            if n == 1:
                writer.close()  # the second request on this socket: gone without a word
                return
            writer.write(sized(b'{"conn":%d}' % conn))
            await writer.drain()

    async def main() -> None:
        server, url = await serve(handler)
        pool = ConnectionPool()
        assert await (await pool.request("POST", url, {}, b"{}", 5)).read() == b'{"conn":0}'
        resp = await pool.request("POST", url, {}, b"{}", 5)  # reuses conn 0, which closes on it
        assert await resp.read() == b'{"conn":2}'  # answered on the fresh connection
        assert requests == [0, 0, 2] and pool.stale == 1 and pool.opened == 2
        server.close()
        await server.wait_closed()
        await pool.close()

    run(main())


def test_a_reused_connection_lost_mid_answer_is_not_sent_again() -> None:
    """Once a byte of the answer arrived the upstream was working on the request: a loss then is the
    attempt's failure (for the walk to judge), never a silent second request."""
    count = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal count
        for n in range(2):
            await read_request(reader)
            count += 1
            if n == 1:
                writer.write(b'HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n{"partial')
                await writer.drain()
                writer.close()
                return
            writer.write(sized(b"{}"))
            await writer.drain()

    async def main() -> None:
        server, url = await serve(handler)
        pool = ConnectionPool()
        assert await (await pool.request("POST", url, {}, b"{}", 5)).read() == b"{}"
        resp = await pool.request("POST", url, {}, b"{}", 5)
        with pytest.raises(UpstreamConnectionError):
            while await resp.content.readany():  # the partial body, then the loss
                pass
        assert count == 2 and pool.stale == 0
        server.close()
        await server.wait_closed()
        await pool.close()

    run(main())


def test_a_reused_connection_reset_before_any_answer_byte_is_the_attempts_failure() -> None:
    """A reset (RST) is the upstream aborting, maybe on the request itself: never sent again silently."""
    import socket
    import struct

    count = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal count
        for n in range(2):
            await read_request(reader)
            count += 1
            if n == 1:
                sock = writer.get_extra_info("socket")
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                writer.transport.abort()  # linger 0: a reset, not a close
                return
            writer.write(sized(b"{}"))
            await writer.drain()

    async def main() -> None:
        server, url = await serve(handler)
        pool = ConnectionPool()
        assert await (await pool.request("POST", url, {}, b"{}", 5)).read() == b"{}"
        with pytest.raises(UpstreamConnectionError):
            await pool.request("POST", url, {}, b"{}", 5)
        assert count == 2 and pool.stale == 0
        server.close()
        await server.wait_closed()
        await pool.close()

    run(main())
