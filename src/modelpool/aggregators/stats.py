"""Fetching and caching endpoint stats (SPEC §6 "Stats").

`StatsCache` keeps one model's stats per entry and never makes the request path wait: `get()` is
synchronous, serves what it has (fresh or stale) and starts at most one background fetch per model.
The parsed shapes live in `endpoints.py` and are re-exported here.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from modelpool.aggregators.endpoints import (
    AGGREGATOR_KINDS,
    AggregatorKind,
    EndpointStats,
    ModelStats,
    StatsUnavailable,
    parse_endpoints,
    stats_root,
    stats_url,
)

__all__ = [
    "AGGREGATOR_KINDS",
    "MAX_STATS_BODY",
    "AggregatorKind",
    "EndpointStats",
    "ModelStats",
    "StatsCache",
    "StatsUnavailable",
    "fetch_endpoint_stats",
    "parse_endpoints",
    "stats_root",
    "stats_url",
]

log = logging.getLogger("modelpool.aggregators")

MAX_STATS_BODY = 4 * 1024 * 1024  # a 22-endpoint answer is ~20 KiB; anything near this is not stats

# ---- fetching --------------------------------------------------------------------------------------


async def fetch_endpoint_stats(
    session: aiohttp.ClientSession,
    kind: str,
    base_url: str,
    model: str,
    api_key: str | None = None,
    *,
    timeout: float = 10.0,
) -> ModelStats:
    """One GET of the endpoint stats; every failure is a `StatsUnavailable` whose text holds no key."""
    url = stats_url(kind, base_url, model)
    headers = {"Accept": "application/json"}
    if api_key:  # Vercel: harmless; OpenRouter: required for latency/throughput
        headers["Authorization"] = f"Bearer {api_key}"
    try:
        async with session.get(url, headers=headers, timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
            body = await _read_capped(resp)
            if resp.status != 200:
                raise StatsUnavailable(f"HTTP {resp.status} from {url}: {_error_text(body)}")
    except StatsUnavailable:
        raise
    except TimeoutError:
        raise StatsUnavailable(f"timeout fetching {url}") from None
    except (aiohttp.ClientError, ConnectionError) as exc:
        raise StatsUnavailable(f"{type(exc).__name__} fetching {url}: {exc}") from None
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise StatsUnavailable(f"invalid JSON from {url}") from None
    return parse_endpoints(kind, payload, model, authenticated=bool(api_key))


async def _read_capped(resp: aiohttp.ClientResponse) -> bytes:
    parts: list[bytes] = []
    size = 0
    async for chunk in resp.content.iter_chunked(64 * 1024):
        size += len(chunk)
        if size > MAX_STATS_BODY:
            raise StatsUnavailable(f"stats answer larger than {MAX_STATS_BODY} bytes")
        parts.append(chunk)
    return b"".join(parts)


def _error_text(body: bytes) -> str:
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body[:200].decode("utf-8", "replace")
    err = obj.get("error") if isinstance(obj, dict) else None
    message = err.get("message") if isinstance(err, dict) else None
    return message[:200] if isinstance(message, str) else body[:200].decode("utf-8", "replace")


# ---- cache -----------------------------------------------------------------------------------------

Fetch = Callable[[str], Awaitable[ModelStats]]


@dataclass(slots=True)
class _Entry:
    stats: ModelStats | None = None
    fetched_at: float | None = None  # clock() of the last successful fetch
    task: asyncio.Task[ModelStats | None] | None = None  # the one in-flight fetch
    failures: int = 0  # consecutive failed fetches (drives the back-off)
    retry_at: float = 0.0  # no new fetch before this clock() value
    last_error: str | None = None

    @property
    def in_flight(self) -> bool:
        return self.task is not None and not self.task.done()


class StatsCache:
    """Per-model stats with stale-while-revalidate, one shared in-flight fetch and back-off.

    `ttl` may be a callable so a live config reload of `stats_ttl` applies without rebuilding the cache.
    After a failed fetch the next one waits `backoff` seconds, doubling per consecutive failure up to
    `max_backoff`; the last good stats keep being served meanwhile (a stats outage must not undo a
    ranking that was right a minute ago).
    """

    def __init__(
        self,
        fetch: Fetch,
        ttl: float | Callable[[], float],
        clock: Callable[[], float] = time.monotonic,
        *,
        backoff: float = 30.0,
        max_backoff: float = 600.0,
        fetch_timeout: float = 15.0,
    ) -> None:
        self._fetch = fetch
        self._ttl = ttl
        self._clock = clock
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.fetch_timeout = fetch_timeout
        self._entries: dict[str, _Entry] = {}
        self._failures = 0

    @property
    def ttl(self) -> float:
        return self._ttl() if callable(self._ttl) else self._ttl

    @property
    def failures(self) -> int:
        """Failed fetches since start (all models): a counter for metrics."""
        return self._failures

    def get(self, model: str) -> ModelStats | None:
        """What is cached now, fresh or stale; never waits. A miss or stale entry starts a refresh."""
        entry = self._entries.get(model)
        if entry is None:
            entry = self._entries[model] = _Entry()
        if not self._fresh(entry):
            self._refresh(model, entry)
        return entry.stats

    def peek(self, model: str) -> ModelStats | None:
        """What is cached, without starting a fetch (for readers that must not cause traffic)."""
        entry = self._entries.get(model)
        return entry.stats if entry is not None else None

    async def get_or_fetch(self, model: str, timeout: float = 10.0) -> ModelStats | None:
        """For the CLI/admin: wait (up to `timeout`) for a fetch when nothing fresh is cached.

        Joins the in-flight fetch rather than starting a second one, and respects the back-off (a
        dashboard polling a dead aggregator must not hammer it); `drop()` clears the back-off.
        """
        entry = self._entries.get(model)
        if entry is None:
            entry = self._entries[model] = _Entry()
        if self._fresh(entry):
            return entry.stats
        task = self._refresh(model, entry)
        if task is not None:
            try:
                # shield: a waiter that gives up must not cancel the fetch other callers share.
                await asyncio.wait_for(asyncio.shield(task), timeout)
            except TimeoutError:
                pass
        return entry.stats

    def drop(self, model: str | None = None) -> None:
        """Forget cached stats and back-off (`--refresh`); an in-flight fetch still lands."""
        entries = self._entries.values() if model is None else [self._entries.get(model)]
        for entry in entries:
            if entry is not None:
                entry.stats = None
                entry.fetched_at = None
                entry.failures = 0
                entry.retry_at = 0.0
                entry.last_error = None

    def age(self, model: str) -> float | None:
        entry = self._entries.get(model)
        if entry is None or entry.fetched_at is None:
            return None
        return max(0.0, self._clock() - entry.fetched_at)

    def refreshing(self, model: str) -> bool:
        entry = self._entries.get(model)
        return entry is not None and entry.in_flight

    def status(self) -> dict[str, dict[str, Any]]:
        now = self._clock()
        out: dict[str, dict[str, Any]] = {}
        for model, entry in self._entries.items():
            out[model] = {
                "age_s": None if entry.fetched_at is None else round(max(0.0, now - entry.fetched_at), 1),
                "fresh": self._fresh(entry),
                "endpoints": len(entry.stats.endpoints) if entry.stats is not None else 0,
                "refreshing": entry.in_flight,
                "failures": entry.failures,
                "retry_in_s": round(entry.retry_at - now, 1) if entry.retry_at > now else 0.0,
                "last_error": entry.last_error,
            }
        return out

    def last_error(self, model: str) -> str | None:
        entry = self._entries.get(model)
        return entry.last_error if entry is not None else None

    async def close(self) -> None:
        """Cancel in-flight fetches (gateway shutdown)."""
        tasks = [e.task for e in self._entries.values() if e.task is not None and not e.task.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    # ---- internals ---------------------------------------------------------------------------------

    def _fresh(self, entry: _Entry) -> bool:
        return entry.fetched_at is not None and self._clock() - entry.fetched_at < self.ttl

    def _refresh(self, model: str, entry: _Entry) -> asyncio.Task[ModelStats | None] | None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return None  # called outside the event loop (sync CLI code): serve the cache only
        # A task of another (finished) loop never completes: e.g. a CLI that ran asyncio.run() twice.
        if entry.in_flight and entry.task is not None and entry.task.get_loop() is loop:
            return entry.task
        if self._clock() < entry.retry_at:
            return None  # backing off after a failure
        entry.task = loop.create_task(self._run(model, entry), name=f"endpoint-stats:{model}")
        return entry.task

    async def _run(self, model: str, entry: _Entry) -> ModelStats | None:
        try:
            # The fetch has its own HTTP timeout; this bound also covers a custom fetch that hangs, so
            # one stuck request cannot block every later refresh of the model.
            stats = await asyncio.wait_for(self._fetch(model), self.fetch_timeout)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            entry.failures += 1
            self._failures += 1
            entry.last_error = str(exc) or type(exc).__name__
            wait = min(self.max_backoff, self.backoff * 2 ** (entry.failures - 1))
            entry.retry_at = self._clock() + wait
            log.warning("endpoint stats for %s unavailable (%s); next try in %.0f s", model, exc, wait)
            return None
        entry.stats = stats
        entry.fetched_at = self._clock()
        entry.failures = 0
        entry.retry_at = 0.0
        entry.last_error = None
        return stats
