"""A small open-loop traffic generator for the demo: chat calls with session headers against a gateway.

Plain aiohttp (no SDK) so it sees raw statuses, headers and stream terminators: it counts complete
replies, HTTP errors, streams that ended without `[DONE]` (or with an error event), connection errors,
the route that served (`x-modelpool-route` header / `modelpool.route` on the final chunk) and switches.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson

_QUESTIONS = (
    "Summarise the trade-offs of optimistic locking in two sentences.",
    "What is a good name for a cat that likes keyboards?",
    "Explain TCP slow start to a new engineer.",
    "Write a haiku about cache invalidation.",
    "Give three tips for reading a flame graph.",
)
_HISTORY_LIMIT = 6  # messages kept per session: enough to look like a conversation, cheap to send


@dataclass
class TrafficStats:
    sent: int = 0
    ok: int = 0
    http_errors: int = 0
    incomplete: int = 0  # stream without terminator, or with a mid-stream error event
    connection_errors: int = 0
    switched: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    routes: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)  # seconds, whole call, successful calls only

    def summary(self) -> dict[str, Any]:
        lat = sorted(self.latencies)
        p50 = lat[len(lat) // 2] if lat else None
        return {
            "sent": self.sent,
            "ok": self.ok,
            "http_errors": self.http_errors,
            "incomplete": self.incomplete,
            "connection_errors": self.connection_errors,
            "switched": self.switched,
            "statuses": dict(self.statuses),
            "routes": dict(self.routes),
            "latency_p50": p50,
        }


def _chat_url(base_url: str) -> str:
    base = base_url.rstrip("/")
    return f"{base}/chat/completions" if base.endswith("/v1") else f"{base}/v1/chat/completions"


async def run_traffic(
    base_url: str,
    model: str,
    *,
    rate: float,
    duration: float | None,
    sessions: int,
    api_key: str | None,
    stream: bool = True,
    stats: TrafficStats | None = None,
    max_in_flight: int = 64,
    on_result: Callable[[TrafficStats], None] | None = None,
) -> TrafficStats:
    """Send `rate` calls/s spread over `sessions` conversations for `duration` seconds (None = until
    cancelled), then wait for the calls in flight and return the counts. Pass `stats` to read progress
    live or to keep the counts when the run is cancelled. `on_result` is called after every call."""
    stats = stats if stats is not None else TrafficStats()
    url = _chat_url(base_url)
    run_id = uuid.uuid4().hex[:8]
    histories: dict[str, list[dict[str, Any]]] = {
        f"traffic-{run_id}-{i}": [] for i in range(max(1, sessions))
    }
    session_ids = itertools.cycle(list(histories))
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    loop = asyncio.get_running_loop()
    deadline = None if duration is None else loop.time() + duration
    interval = 1.0 / rate if rate > 0 else 1.0
    in_flight: set[asyncio.Task[None]] = set()
    timeout = aiohttp.ClientTimeout(total=300, sock_connect=10)
    async with aiohttp.ClientSession(
        timeout=timeout, connector=aiohttp.TCPConnector(limit=max_in_flight)
    ) as http:

        async def one(session_id: str, n: int) -> None:
            history = histories[session_id]
            history.append({"role": "user", "content": _QUESTIONS[n % len(_QUESTIONS)]})
            body = {"model": model, "messages": history[-_HISTORY_LIMIT:], "stream": stream}
            call_headers = {**headers, "x-session-id": session_id}
            answer = await _call(http, url, body, call_headers, stream, stats, loop)
            if answer is not None:
                history.append({"role": "assistant", "content": answer})
            if on_result is not None:
                on_result(stats)

        try:
            for n in itertools.count():
                if deadline is not None and loop.time() >= deadline:
                    break
                if len(in_flight) < max_in_flight:
                    task = asyncio.create_task(one(next(session_ids), n))
                    in_flight.add(task)
                    task.add_done_callback(in_flight.discard)
                    stats.sent += 1
                await asyncio.sleep(interval)
            if in_flight:
                await asyncio.wait(in_flight, timeout=60)
        finally:
            for task in in_flight:
                task.cancel()
            with contextlib.suppress(Exception):
                await asyncio.gather(*in_flight, return_exceptions=True)
    return stats


async def _call(
    http: aiohttp.ClientSession,
    url: str,
    body: dict[str, Any],
    headers: dict[str, str],
    stream: bool,
    stats: TrafficStats,
    loop: asyncio.AbstractEventLoop,
) -> str | None:
    """One call; returns the answer text when it completed."""
    started = loop.time()
    try:
        async with http.post(
            url, data=orjson.dumps(body), headers={**headers, "Content-Type": "application/json"}
        ) as resp:
            stats.statuses[resp.status] += 1
            if resp.headers.get("x-modelpool-switched"):
                stats.switched += 1
            if resp.status != 200:
                stats.http_errors += 1
                await resp.read()
                return None
            if stream:
                text, route = await _read_stream(resp)
            else:
                data = orjson.loads(await resp.read())
                text = (data.get("choices") or [{}])[0].get("message", {}).get("content") or ""
                route = None
            route = route or resp.headers.get("x-modelpool-route")
    except aiohttp.ClientPayloadError:  # the body broke off after a 200: a cut stream
        stats.incomplete += 1
        return None
    except (TimeoutError, aiohttp.ClientError, orjson.JSONDecodeError):
        stats.connection_errors += 1
        return None
    if text is None:
        stats.incomplete += 1
        return None
    stats.ok += 1
    stats.latencies.append(loop.time() - started)
    if route:
        stats.routes[route] += 1
    return text


async def _read_stream(resp: aiohttp.ClientResponse) -> tuple[str | None, str | None]:
    """(answer text or None when the stream did not end with `[DONE]`, route from the final chunk)."""
    parts: list[str] = []
    route: str | None = None
    async for raw in resp.content:
        line = raw.strip()
        if not line.startswith(b"data:"):
            continue
        payload = line[5:].strip()
        if payload == b"[DONE]":
            return "".join(parts), route
        try:
            chunk = orjson.loads(payload)
        except orjson.JSONDecodeError:
            continue
        if "error" in chunk:
            return None, route
        meta = chunk.get("modelpool")
        if isinstance(meta, dict) and meta.get("route"):
            route = str(meta["route"])
        for choice in chunk.get("choices") or []:
            content = (choice.get("delta") or {}).get("content")
            if content:
                parts.append(content)
    return None, route
