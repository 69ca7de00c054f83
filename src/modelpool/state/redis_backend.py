"""Redis state (SPEC §9): several gateway processes or machines share health, rests, pins, cursors,
counters, the dashboard layer and its roster switches.

The request path never talks to Redis. `put`/`delete`/`bump` record the change in the coalescing book
(`redis_book`) and wake a background writer, which sends everything pending as one atomic script run
that also publishes it on the change feed (`redis_ops`); a reader applies the other replicas' changes to
local memory through the listener the gateway registered. Every Redis command has a
short socket timeout and the connection sits behind a circuit breaker: on a failure the backend turns
unhealthy, keeps collecting writes locally and retries with backoff; when Redis answers again it pushes
what changed meanwhile (everything, if Redis lost its data), reloads the shared state and resubscribes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from typing import Any

import orjson
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from modelpool.state import redis_ops as ops
from modelpool.state.base import StateBackend, decode
from modelpool.state.redis_book import Listener, SyncBook

log = logging.getLogger(__name__)

SHARED_NAMESPACES = ("health", "pins", "dashboard", "roster", "meta")
# The fleet view (sessions, events, watcher counts): ephemeral items with a TTL, reloaded after an outage
# like the rest but never kept for a restore — each replica re-shares its own on every (re)connect.
LIVE_NAMESPACES = ("live.sessions", "live.events", "live.watchers", "live.quota")
HEARTBEAT = 1.0  # an idle writer pings this often, so a dead Redis is noticed without traffic
MIN_BACKOFF, MAX_BACKOFF = 0.2, 5.0
BULK_TIMEOUT = 3.0  # loads (start-up, resync) read many keys; they run in the background anyway
SCAN_BATCH = 500
CHUNK = 500  # changes per script run: a run blocks Redis, so a huge batch is cut in pieces
PRUNE_EVERY = 30.0  # seconds between sweeps of expired values out of the restore mirror


class RedisBackend(StateBackend):
    name = "redis"
    shared = True

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "modelpool",
        persist_ttl: float = 86400.0,
        op_timeout: float = 0.1,
        connect_wait: float = 0.5,
        batch_window: float = 0.05,
    ) -> None:
        self.url = url
        self.keys = ops.Keys(prefix)
        self.origin = uuid.uuid4().hex[:12]  # this replica on the change feed
        self.op_timeout = op_timeout
        self.connect_wait = connect_wait
        self.batch_window = batch_window
        self._last_send = 0.0
        # Health records live as long as the persisted history, and never less than an hour when
        # persistence is off: sharing a rest is the point of this backend.
        self._health_ttl = persist_ttl if persist_ttl > 0 else 3600.0
        self.book = SyncBook(self.origin, self.keys)
        self._fast: aioredis.Redis | None = None
        self._bulk: aioredis.Redis | None = None
        self._batch_sha = ""
        self._epoch: str | None = None
        self._wake = asyncio.Event()
        self._connected = asyncio.Event()
        self._write_lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._resync = False
        self._healthy = False
        self._last_error: str | None = "not connected yet"
        self._since = time.time()

    # -- lifecycle ---------------------------------------------------------------------------------

    def set_listener(self, listener: Listener) -> None:
        self.book.listener = listener

    async def start(self) -> None:
        if self._task is not None:
            return
        self._closing = False
        self._task = asyncio.create_task(self._supervise(), name="modelpool-redis-state")
        try:
            # Give a reachable Redis a moment so the first load sees the shared state; an unreachable
            # one must not hold the gateway back — it resyncs through the listener once it answers.
            await asyncio.wait_for(self._connected.wait(), self.connect_wait)
        except TimeoutError:
            self._resync = True

    async def close(self) -> None:
        if self._task is None:
            return
        self._closing = True
        if self._healthy:
            with contextlib.suppress(RedisError, OSError, TimeoutError):
                await asyncio.wait_for(self.flush(), 1.0)
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None
        pending = self.book.pending
        if pending:
            log.warning("state: %d changes could not be sent to redis", pending)

    async def _supervise(self) -> None:
        backoff = MIN_BACKOFF
        while not self._closing:
            try:
                await self._session()
            except asyncio.CancelledError:
                raise
            except (RedisError, OSError, TimeoutError) as exc:
                if self._healthy:
                    backoff = MIN_BACKOFF  # a session that worked starts the backoff over
                self._mark_unhealthy(exc)
            except Exception as exc:  # a bug must degrade to local state, not kill the sync for good
                log.exception("state: redis sync failed")
                self._mark_unhealthy(exc)
            finally:
                await self._drop_clients()
            self._resync = True
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF)

    async def _session(self) -> None:
        """One connected period: connect, subscribe, push, reload, then read and write until a failure."""
        self._fast = self._client(self.op_timeout)
        self._bulk = self._client(BULK_TIMEOUT)
        reader = self._client(None)  # a subscriber waits for messages indefinitely
        pubsub = reader.pubsub(ignore_subscribe_messages=True)
        try:
            await asyncio.wait_for(pubsub.subscribe(self.keys.channel), BULK_TIMEOUT)
            self.book.inflight.clear()  # echoes of the last session are lost; retried ops are re-echoed
            await self._prepare(self._bulk)
            self._mark_healthy()
            self._connected.set()
            if self.on_connect is not None:
                try:
                    self.on_connect()
                except Exception:  # the fleet view must never stop the state sync
                    log.exception("state: re-sharing the fleet view failed")
            await self.flush()
            if self._resync:
                await self._reload()
                self._resync = False
            tasks = [
                asyncio.create_task(self._read(pubsub), name="modelpool-redis-read"),
                asyncio.create_task(self._write_loop(), name="modelpool-redis-write"),
            ]
            try:
                done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
            for task in done:
                task.result()
        finally:
            with contextlib.suppress(Exception):
                await pubsub.aclose()
            with contextlib.suppress(Exception):
                await reader.aclose()

    def _client(self, timeout: float | None) -> aioredis.Redis:
        # No client-side retries: the circuit breaker decides when to try again, a retry would only
        # multiply the time a dead Redis costs.
        return aioredis.Redis.from_url(
            self.url,
            socket_timeout=timeout,
            socket_connect_timeout=self.op_timeout * 2,
            retry=Retry(NoBackoff(), 0),
            health_check_interval=0,
        )

    async def _drop_clients(self) -> None:
        for client in (self._fast, self._bulk):
            if client is not None:
                with contextlib.suppress(Exception):
                    await client.aclose()
        self._fast = self._bulk = None

    async def _prepare(self, client: aioredis.Redis) -> None:
        """Load the scripts and notice a Redis that lost its data (restarted without persistence)."""
        self._batch_sha = await client.script_load(ops.BATCH_SCRIPT)
        await client.set(self.keys.epoch, uuid.uuid4().hex, nx=True)
        epoch = _text(await client.get(self.keys.epoch))
        if self._epoch is not None and epoch != self._epoch:
            log.warning("state: redis lost the shared state; restoring it from this replica")
            self.book.restore_all()
        self._epoch = epoch

    # -- writes (hot path: no I/O, no waiting) ---------------------------------------------------

    def put(self, namespace: str, key: str, value: Any) -> None:
        self.book.put(namespace, key, value)
        self._wake.set()

    def delete(self, namespace: str, key: str) -> None:
        self.book.delete(namespace, key)
        self._wake.set()

    def share(self, namespace: str, key: str, value: Any, ttl: float) -> None:
        # While Redis is away the fleet view is per process: nothing piles up, `on_connect` re-shares.
        if self._healthy:
            self.book.share(namespace, key, value, ttl)
            self._wake.set()

    def bump(self, namespace: str, key: str, local_value: int) -> None:
        """Count one step of a shared monotonic counter this replica took, now at `local_value`."""
        self.book.bump(namespace, key, local_value)
        self._wake.set()

    async def flush(self) -> None:
        if self._fast is None or not self._healthy:
            return
        async with self._write_lock:
            await self._send(self._fast)

    async def _write_loop(self) -> None:
        next_prune = time.monotonic() + PRUNE_EVERY
        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), HEARTBEAT)
            except TimeoutError:
                assert self._fast is not None
                await self._fast.ping()
            else:
                # At most one pipeline per batch window: a lone change goes out at once, but under load
                # one pipeline carries the writes of many calls — far less CPU than a round trip per
                # call, which is what a busy gateway would pay otherwise (measured: bench/).
                wait = self._last_send + self.batch_window - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                self._wake.clear()
                self._last_send = time.monotonic()
                await self.flush()
            if time.monotonic() >= next_prune:
                self.book.prune(time.time())
                next_prune = time.monotonic() + PRUNE_EVERY

    async def _send(self, client: aioredis.Redis) -> None:
        now = time.time()
        items, batch = self.book.take(now)
        if not items:
            return
        # A big batch (a restore after Redis lost its data) goes in chunks, on the patient connection.
        if len(items) > CHUNK:
            client = self._bulk or client
        pipe: Any = client.pipeline(transaction=False)
        head = {"o": self.origin, "ch": self.keys.channel, "now": now, "ttl": self._health_ttl}
        for i in range(0, len(items), CHUNK):
            chunk = items[i : i + CHUNK]
            arg = orjson.dumps({**head, "items": [item for _, item in chunk]})
            pipe.evalsha(self._batch_sha, len(chunk), *[k for k, _ in chunk], arg)
        try:
            await pipe.execute()
        except BaseException:
            self.book.requeue(batch)
            raise

    # -- the change feed -------------------------------------------------------------------------

    async def _read(self, pubsub: Any) -> None:
        while True:
            message = await pubsub.get_message(timeout=HEARTBEAT)
            if message is not None and message.get("type") == "message":
                try:
                    self.book.on_message(message["data"])
                except Exception:  # one bad message must not stop the feed
                    log.exception("state: could not apply a change from redis")

    async def _reload(self) -> None:
        """Pull the whole shared state into local memory (after an outage or a late first connect)."""
        for ns in SHARED_NAMESPACES + LIVE_NAMESPACES:
            self.book.apply_loaded(ns, await self._fetch(ns))
        self.book.apply_loaded("counters", await self._fetch_counters("counters"))

    # -- reads -------------------------------------------------------------------------------------

    async def load(self, namespace: str) -> dict[str, Any]:
        result: dict[str, Any] = {}
        if self._healthy and self._bulk is not None:
            try:
                if namespace == "counters":
                    result.update(await self._fetch_counters(namespace))
                result.update(await self._fetch(namespace))
            except (RedisError, OSError, TimeoutError) as exc:
                self._mark_unhealthy(exc)
        if namespace == ops.HEALTH_NS:
            self.book.confirm_loaded(result)
        return self.book.overlay(namespace, result)

    async def _fetch(self, ns: str) -> dict[str, Any]:
        client = self._bulk
        if client is None:
            return {}
        names = [_text(k) async for k in client.scan_iter(match=self.keys.pattern(ns), count=SCAN_BATCH)]
        head = len(self.keys.health("") if ns == ops.HEALTH_NS else self.keys.value(ns, ""))
        out: dict[str, Any] = {}
        for i in range(0, len(names), SCAN_BATCH):
            chunk = names[i : i + SCAN_BATCH]
            if ns == ops.HEALTH_NS:
                pipe = client.pipeline(transaction=False)
                for name in chunk:
                    pipe.hgetall(name)
                rows = await pipe.execute()
                out.update({n[head:]: ops.decode_health(r) for n, r in zip(chunk, rows, strict=True) if r})
            else:
                rows = await client.mget(chunk)
                for name, raw in zip(chunk, rows, strict=True):
                    if raw is not None:
                        with contextlib.suppress(orjson.JSONDecodeError):
                            out[name[head:]] = decode(raw)
        return out

    async def _fetch_counters(self, ns: str) -> dict[str, int]:
        client = self._bulk
        if client is None:
            return {}
        pattern = self.keys.counter_pattern(ns)
        names = [_text(k) async for k in client.scan_iter(match=pattern, count=SCAN_BATCH)]
        head = len(self.keys.counter(ns, ""))
        rows = await client.mget(names) if names else []
        return {n[head:]: int(r) for n, r in zip(names, rows, strict=True) if r is not None}

    # -- status ------------------------------------------------------------------------------------

    @property
    def healthy(self) -> bool:
        return self._healthy

    def describe(self) -> dict[str, Any]:
        from modelpool.config.layers import redact_url

        info: dict[str, Any] = {
            "backend": self.name,
            "url": redact_url(self.url),
            "prefix": self.keys.prefix,
            "healthy": self._healthy,
            "status": "connected" if self._healthy else "degraded: serving on local state",
            "since": self._since,
            "replica": self.origin,
            "pending_writes": self.book.pending,
        }
        if self._last_error and not self._healthy:
            info["last_error"] = self._last_error
        return info

    def _mark_healthy(self) -> None:
        if not self._healthy:
            log.info("state: connected to redis %s", self.describe()["url"])
            self._since = time.time()
        self._healthy = True
        self._last_error = None

    def _mark_unhealthy(self, exc: BaseException) -> None:
        if self._healthy:  # log on the transition only: the breaker retries every few seconds
            log.warning("state: redis unavailable, serving on local state until it returns: %s", exc)
            self._since = time.time()
        self._healthy = False
        self._last_error = f"{type(exc).__name__}: {exc}"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
