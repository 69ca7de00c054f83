"""The one upstream connection pool of the process, and the failure type of an attempt.

One pool per process keeps connections warm across calls and routes: the hot path's own HTTP/1.1 client
(`upstream.http1`, several times cheaper than aiohttp's per request) for the attempts, one aiohttp
`ClientSession` for the rest (aggregator stats, JSON reads). Timeouts (SPEC §3.2):
`connect` covers the TCP/TLS set-up, `first_byte` the wait for the first meaningful upstream event
(enforced by the walk), `idle` the gap between two reads of a stream or of a non-streamed body once its
headers arrived (enforced per read by the relays, `relays.reads.UpstreamReads`), `response` a whole
non-streamed answer (enforced by the walk).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import aiohttp
import orjson

from modelpool.config.limits import TimeoutsConfig
from modelpool.health.classify import FailureKind, classify, parse_retry_after
from modelpool.health.quota_headers import announces_quota
from modelpool.upstream.http1 import ConnectionPool, Response

MAX_ERROR_BODY = 64 * 1024  # an error body is read for classification, never relayed whole
ERROR_BODY_TIMEOUT = 10.0  # an error status whose body then stalls must not hold the walk


class AttemptFailure(Exception):
    """One attempt failed; `kind` decides retry/switch/rest (SPEC §5)."""

    def __init__(
        self,
        kind: FailureKind,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        body: bytes | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status
        self.retry_after = retry_after
        self.body = body  # upstream error body (for `request` failures relayed to the client)


class QuotaSink(Protocol):
    def spend(self, route: str) -> None: ...
    def observe(self, route: str, headers: Mapping[str, str]) -> None: ...


class UpstreamClient:
    """Owns the attempts' connection pool and the aiohttp session. Created inside the running loop; closed
    on shutdown."""

    def __init__(self, timeouts: TimeoutsConfig) -> None:
        self._session: aiohttp.ClientSession | None = None
        self._pool: ConnectionPool | None = None
        self._pool_loop: asyncio.AbstractEventLoop | None = None
        # SPEC §3.8: where replies with rate-limit headers go (`health.quota.QuotaBook`); None: ignored.
        self.quota: QuotaSink | None = None
        self.set_timeouts(timeouts)

    def set_timeouts(self, timeouts: TimeoutsConfig) -> None:
        self.timeouts = timeouts
        # No aiohttp `sock_read`: (1) it also ran while a provider generated a non-streamed answer, so every
        # answer slower than `idle` was cut and retried (tokens paid twice); (2) aiohttp re-arms it when a
        # paused read resumes after the body's end, by which time the connection is back in the pool: the
        # timer fired there and the next call on that connection failed at once with a stale "Timeout on
        # reading data from socket" (seen after a large stream read slower than it arrived).
        self._timeout = aiohttp.ClientTimeout(
            total=None, connect=timeouts.connect, sock_connect=timeouts.connect, sock_read=None
        )

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300, keepalive_timeout=60)
            self._session = aiohttp.ClientSession(
                connector=connector,
                timeout=self._timeout,
                json_serialize=lambda o: orjson.dumps(o).decode(),
                skip_auto_headers=("User-Agent",),
                auto_decompress=True,
            )
        return self._session

    @property
    def pool(self) -> ConnectionPool:
        """The attempts' connections; a new pool when the running loop changed (a library user calling
        `asyncio.run` once per call): sockets belong to the loop that opened them."""
        loop = asyncio.get_running_loop()
        if self._pool is None or self._pool_loop is not loop:
            self._pool, self._pool_loop = ConnectionPool(), loop
        return self._pool

    def connection_counts(self) -> tuple[int, int]:
        """(connections the attempts' pool opened, requests it sent again on a fresh connection because the
        kept-alive one had been closed by the upstream), since start; read at scrape time."""
        pool = self._pool
        return (pool.opened, pool.stale) if pool is not None else (0, 0)

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None
        if self._pool is not None:
            await self._pool.close()
        self._pool = None

    async def post(
        self,
        url: str,
        headers: Iterable[tuple[str, str]],
        body: bytes,
        *,
        route: str = "",
        connect: float | None = None,
    ) -> Response:
        """POST and return the response once headers arrived and the status is 2xx.

        Any failure before that is raised as an `AttemptFailure` already classified. `route`: whose
        quota the answer's rate-limit headers announce (SPEC §3.8, `on_quota`); `connect`: the route's
        own connect limit (SPEC §3.9), else the global one.
        """
        hdrs = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        hdrs.update(headers)
        quota = self.quota
        if quota is not None and route:
            quota.spend(route)
        try:
            resp = await self.pool.request(
                "POST", url, hdrs, body, self.timeouts.connect if connect is None else connect
            )
        except TimeoutError as exc:
            raise AttemptFailure(FailureKind.NETWORK, f"timeout: {exc or 'connecting'}") from exc
        except OSError as exc:  # refused, reset, DNS, TLS, a malformed answer (UpstreamConnectionError)
            raise AttemptFailure(FailureKind.NETWORK, f"{type(exc).__name__}: {exc}") from exc
        if quota is not None and announces_quota(resp.headers):
            quota.observe(route, resp.headers)  # read after this step, not here
        if resp.status >= 400:
            raise await failure_from_response(resp)
        return resp

    async def get_json(self, url: str, headers: Iterable[tuple[str, str]], timeout: float) -> Any:
        async with asyncio.timeout(timeout):
            async with self.session.get(url, headers=dict(headers)) as resp:
                if resp.status >= 400:
                    raise await failure_from_response(resp)
                return orjson.loads(await resp.read())


async def failure_from_response(resp: Response | aiohttp.ClientResponse) -> AttemptFailure:
    try:
        async with asyncio.timeout(ERROR_BODY_TIMEOUT):
            body = await resp.content.read(MAX_ERROR_BODY)
    except (aiohttp.ClientError, OSError, TimeoutError):
        body = b""
    finally:
        resp.release()
    message = error_message(body) or resp.reason or f"HTTP {resp.status}"
    kind = classify(resp.status, message)
    retry_after = parse_retry_after(resp.headers.get("Retry-After"), time.time())
    return AttemptFailure(kind, message, status=resp.status, retry_after=retry_after, body=body)


def error_message(body: bytes) -> str:
    """The human message of an upstream error body in any dialect; objects are serialised, not str()'d."""
    if not body:
        return ""
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body[:2000].decode("utf-8", "replace").strip()
    if isinstance(obj, dict):
        err = obj.get("error", obj)
        if isinstance(err, dict):
            msg = err.get("message") or err.get("msg") or err.get("detail")
            if isinstance(msg, str):
                return msg
            return orjson.dumps(err).decode()
        if isinstance(err, str):
            return err
    return orjson.dumps(obj).decode()[:2000]
