"""The hot path's HTTP/1.1 client: POST a body upstream, read the answer as it arrives, keep the
connection for the next call.

Hand-written because aiohttp's client was the largest single cost of a relayed call: about 400 µs of CPU
per request against ~50 µs for this (asyncio protocol + the `httptools` parser uvicorn uses, one write per
request), measured side by side against the same loopback upstream (bench/RESULTS.md, issue #21). It does
only what the relays need — one request at a time per connection, keep-alive, chunked or sized or
until-close bodies, gzip/deflate, TLS — and aiohttp stays for everything off the hot path (aggregator
stats, the admin client, probes of the calendar).

The parts, as in httpx's transport layer: `ConnectionPool` hands out `Connection`s per origin (reused
while idle and alive); a `Connection` is the socket protocol and parses one response at a time into a
`Response`; a `Response`'s `content` is a `BodyReader` (`upstream/body.py`) with the few aiohttp
`StreamReader` methods the relays call (`readany`, `read`, `is_eof`, `read_nowait`). A connection goes
back to the pool the moment its response is complete (like aiohttp's auto-release), so `close()` after a
whole body costs nothing.
"""

from __future__ import annotations

import asyncio
import ssl
import time
import zlib
from collections.abc import Mapping
from urllib.parse import urlsplit

import httptools
from multidict import CIMultiDict

from modelpool.upstream.body import HIGH_WATER, BodyReader

__all__ = ["HIGH_WATER", "BodyReader", "Connection", "ConnectionPool", "Response", "UpstreamConnectionError"]

KEEPALIVE = 30.0  # seconds an idle connection is kept; most servers close theirs after 60 s or more
MAX_IDLE_PER_ORIGIN = 256


class UpstreamConnectionError(ConnectionError):
    """The upstream connection failed, closed or answered something that is not HTTP/1.1."""


class StaleConnection(UpstreamConnectionError):
    """A kept-alive connection the upstream closed before any byte of the answer to a request sent on it:
    it had closed it while idle (llama-server drops one after a few replies without saying so). The request
    goes again, once, on a fresh connection — neither a retry nor a failure."""


class Response:
    """One upstream answer: status and headers once they arrived, the body as `content`."""

    __slots__ = ("_conn", "content", "headers", "reason", "status")

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self.status = 0
        self.reason = ""
        self.headers: CIMultiDict[str] = CIMultiDict()
        self.content = BodyReader(conn)

    async def read(self) -> bytes:
        """The whole body."""
        return await self.content.read(-1)

    def release(self) -> None:
        """Done with the body: a complete answer's connection is already back in the pool; an unfinished
        one cannot be reused and is closed."""
        if not self.content._eof:
            self._conn.close()

    def close(self) -> None:
        """Stop now: the connection is closed unless the answer was already complete (then it is pooled)."""
        if not self.content._eof:
            self._conn.close()
            self.content._finish(UpstreamConnectionError("response closed"))


class Connection(asyncio.Protocol):
    """One upstream socket, one request at a time (HTTP/1.1 keep-alive, no pipelining)."""

    def __init__(self, pool: ConnectionPool, origin: tuple[str, str, int]) -> None:
        self.pool = pool
        self.origin = origin
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.response: Response | None = None
        self.headers_done: asyncio.Future[Response] | None = None
        self.idle_since = 0.0
        self.closed = False
        self._until_close = False
        self.reused = False  # the current request went out on a connection an earlier answer used
        self.answered = False  # a byte of the current request's answer arrived

    # -- asyncio.Protocol ---------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.answered = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(UpstreamConnectionError(f"malformed upstream response: {exc}"))
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.pool._forget(self)
        if self.response is not None and self._until_close and self.headers_done is None:
            self.response.content._finish()  # a body delimited by the connection's end: complete
            return
        # A reused connection the upstream *closed* (a FIN: EOF, or EPIPE writing to it) before any byte of
        # the answer had been closed while idle, its close racing our request: the pool sends the request
        # again on a fresh connection. A reset (RST) or any other loss may be the upstream failing on the
        # request (a generation started, maybe billed): an attempt's failure for the walk to judge. A
        # connection seen closed before reuse is skipped (`_take`).
        closed = exc is None or isinstance(exc, BrokenPipeError)
        stale = closed and self.reused and not self.answered and self.headers_done is not None
        error = StaleConnection if stale else UpstreamConnectionError
        self._fail(error(f"upstream connection lost{f': {exc}' if exc else ''}"))

    def pause(self) -> bool:
        if self.transport is not None and not self.closed:
            self.transport.pause_reading()
            return True
        return False

    def resume(self) -> None:
        if self.transport is not None and not self.closed:
            self.transport.resume_reading()

    # -- httptools callbacks ------------------------------------------------------------------------

    def on_status(self, status: bytes) -> None:
        if self.response is not None:
            self.response.reason = status.decode("latin-1")

    def on_header(self, name: bytes, value: bytes) -> None:
        if self.response is not None:
            self.response.headers.add(name.decode("latin-1"), value.decode("latin-1"))

    def on_headers_complete(self) -> None:
        resp = self.response
        if resp is None:
            return
        resp.status = self.parser.get_status_code()
        if 100 <= resp.status < 200:  # an interim answer (103 Early Hints): the real one follows
            resp.headers = CIMultiDict()
            return
        headers = resp.headers
        self._until_close = "content-length" not in headers and "chunked" not in headers.get(
            "transfer-encoding", ""
        )
        encoding = headers.get("content-encoding", "").strip().lower()
        if encoding in ("gzip", "deflate"):
            resp.content._decoder = zlib.decompressobj(31 if encoding == "gzip" else 15)
        waiter, self.headers_done = self.headers_done, None
        if waiter is not None and not waiter.done():
            waiter.set_result(resp)

    def on_body(self, body: bytes) -> None:
        if self.response is not None:
            self.response.content._feed(body)

    def on_message_complete(self) -> None:
        resp = self.response
        if resp is None or 100 <= resp.status < 200:
            return
        keep = self.parser.should_keep_alive() and not self._until_close
        self.response = None
        resp.content._finish()
        if keep:
            self.pool._put_back(self)
        else:
            self.close()

    # -- the pool's side ----------------------------------------------------------------------------

    def send(self, head: bytes, body: bytes) -> asyncio.Future[Response]:
        assert self.transport is not None
        self.response = Response(self)
        self._until_close = False
        self.answered = False
        self.headers_done = asyncio.get_running_loop().create_future()
        self.transport.write(head + body)  # one write: headers and body in the same segment
        return self.headers_done

    def _fail(self, exc: BaseException) -> None:
        waiter, self.headers_done = self.headers_done, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)
        if self.response is not None:
            self.response.content._finish(exc)
            self.response = None

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.pool._forget(self)
            if self.transport is not None:
                self.transport.abort()  # at once: a cancelled call stops the upstream's generation too


class ConnectionPool:
    """Idle connections per origin (scheme, host, port); any number open at once."""

    def __init__(self, keepalive: float = KEEPALIVE) -> None:
        self.keepalive = keepalive
        self._idle: dict[tuple[str, str, int], list[Connection]] = {}
        self._open: set[Connection] = set()
        self._targets: dict[str, tuple[tuple[str, str, int], bytes]] = {}
        self._ssl: ssl.SSLContext | None = None
        self.opened = 0  # connections made so far (tests and benchmarks read it)
        self.stale = 0  # requests sent again because their kept-alive connection had been closed

    async def request(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes, connect_timeout: float
    ) -> Response:
        """Send the request; the response once its status and headers arrived."""
        origin, target = self._target(url)
        head = _head(method, target, origin, headers, len(body))
        conn = self._take(origin)
        if conn is not None:
            try:
                return await self._exchange(conn, head, body)
            except StaleConnection:
                self.stale += 1  # closed by the upstream while idle: once more on a fresh connection
        conn = await self._connect(origin, connect_timeout)
        return await self._exchange(conn, head, body)

    async def close(self) -> None:
        for conn in list(self._open):
            conn.close()
        self._idle.clear()

    # -- internals ----------------------------------------------------------------------------------

    async def _exchange(self, conn: Connection, head: bytes, body: bytes) -> Response:
        try:
            return await conn.send(head, body)
        except BaseException:
            conn.close()  # cancelled or failed mid-answer: the connection's state is unknown
            raise

    def _target(self, url: str) -> tuple[tuple[str, str, int], bytes]:
        found = self._targets.get(url)
        if found is None:
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise UpstreamConnectionError(f"unsupported upstream URL {url!r}")
            port = parts.port or (443 if parts.scheme == "https" else 80)
            path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            found = ((parts.scheme, parts.hostname, port), path.encode("latin-1"))
            if len(self._targets) < 4096:  # a catalog's URLs: a bounded memo
                self._targets[url] = found
        return found

    def _take(self, origin: tuple[str, str, int]) -> Connection | None:
        idle = self._idle.get(origin)
        now = time.monotonic()
        while idle:
            conn = idle.pop()
            if conn.closed or conn.transport is None or conn.transport.is_closing():
                continue
            if now - conn.idle_since > self.keepalive:
                conn.close()
                continue
            conn.reused = True
            return conn
        return None

    async def _connect(self, origin: tuple[str, str, int], timeout: float) -> Connection:
        scheme, host, port = origin
        loop = asyncio.get_running_loop()
        tls = self._tls() if scheme == "https" else None
        async with asyncio.timeout(timeout):
            _, conn = await loop.create_connection(
                lambda: Connection(self, origin), host, port, ssl=tls, server_hostname=host if tls else None
            )
        self._open.add(conn)
        self.opened += 1
        return conn

    def _tls(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = ssl.create_default_context()
        return self._ssl

    def _put_back(self, conn: Connection) -> None:
        conn.resume()  # a reader that paused the socket has the whole body by now
        conn.idle_since = time.monotonic()
        idle = self._idle.setdefault(conn.origin, [])
        if len(idle) >= MAX_IDLE_PER_ORIGIN:
            conn.close()
            return
        idle.append(conn)

    def _forget(self, conn: Connection) -> None:
        self._open.discard(conn)
        idle = self._idle.get(conn.origin)
        if idle and conn in idle:
            idle.remove(conn)


def _head(
    method: str, target: bytes, origin: tuple[str, str, int], headers: Mapping[str, str], size: int
) -> bytes:
    scheme, host, port = origin
    default = 443 if scheme == "https" else 80
    authority = host if port == default else f"{host}:{port}"
    text = "".join([f"{k}: {v}\r\n" for k, v in headers.items()])
    if text.count("\n") != len(headers) or text.count("\r") != len(headers):
        # A line break inside a name or value (a config value pasted with one) would split the request.
        raise UpstreamConnectionError("an upstream header name or value contains a line break")
    try:
        fields = text.encode("latin-1")
    except UnicodeEncodeError:
        raise UpstreamConnectionError("an upstream header is not latin-1 text") from None
    start = f"{method} ".encode() + target + f" HTTP/1.1\r\nhost: {authority}\r\n".encode("latin-1")
    return start + fields + f"content-length: {size}\r\n\r\n".encode()
