"""The load generator: one aiohttp session (keep-alive), the same request body for every target.

Two shapes of load, both run in *blocks* so the caller can alternate targets block by block:

- closed loop (`closed_block`): N workers each send their next call as soon as the last one finished;
  concurrency 1 is the sequential benchmark. Latency = send → last byte.
- open loop (`open_block`): calls start on a fixed schedule whatever the server's speed. Latency is taken
  from the *scheduled* start, so a server that falls behind is charged for the queueing it causes
  (no coordinated omission).

Dialects: a target speaks OpenAI Chat Completions (`/v1/chat/completions`), Anthropic Messages
(`/v1/messages`) or OpenAI Responses (`/v1/responses`); the body and the stream parsing follow it.

Streams: TTFT is the arrival of the first SSE event that carries answer text, reasoning or a tool call —
not the first byte, because the direct upstream sends a role-only chunk first while the gateway holds
such markup back until real content arrives; timing the first byte would compare different things.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson

from harness.procs import CLIENT_KEY, Child

_TAIL = 64  # bytes of stream tail kept to check the `[DONE]` terminator
# Per dialect: what a non-streamed answer body must hold, and the stream's success terminator (for
# Responses the name of the last event; its data, the whole response, may be longer than _TAIL).
_ANSWER_MARKER = {
    "openai": b'"choices"',
    "anthropic": b'"content"',
    "responses": b'"output"',
    "gemini": b'"candidates"',
}
_END_MARKER = {
    "openai": b"[DONE]",
    "anthropic": b"message_stop",
    "responses": b"response.completed",
    "gemini": b'"finishReason"',  # no terminator: the last event carries it
}


@dataclass
class Target:
    """One thing under test: `direct` (the upstream itself), `modelpool`, `litellm`."""

    name: str
    url: str  # full chat-completions (or messages) URL
    server: Child | None  # the process whose CPU is charged to this target (None: nothing in between)
    headers: dict[str, str] = field(default_factory=dict)
    dialect: str = "openai"  # "openai" | "anthropic" | "responses": the body and stream events it speaks


@dataclass(slots=True)
class Sample:
    ok: bool
    total: float  # seconds, start (or scheduled start) → last byte
    ttft: float | None = None  # seconds to the first content event (streams only)
    route: str | None = None  # x-modelpool-route, when the target is the gateway
    error: str | None = None
    events: int = 0  # SSE events received (streams): the chunks the target relayed


def make_body(
    model: str, stream: bool, prompt: str = "Say hello in one short sentence.", dialect: str = "openai"
) -> bytes:
    if dialect == "gemini":  # the model and the stream flag are in the URL (`gemini_path`)
        return orjson.dumps({"contents": [{"role": "user", "parts": [{"text": prompt}]}]})
    messages = [{"role": "user", "content": prompt}]
    body: dict[str, Any] = {"model": model, ("input" if dialect == "responses" else "messages"): messages}
    if dialect == "anthropic":
        body["max_tokens"] = 4096  # required by the dialect; above every bench model's reply
    if stream:
        body["stream"] = True
    return orjson.dumps(body)


def gemini_path(model: str, stream: bool) -> str:
    """The Gemini API's path below its API root (`/v1beta`)."""
    return f"/models/{model}:streamGenerateContent?alt=sse" if stream else f"/models/{model}:generateContent"


def new_session(concurrency: int, timeout: float) -> aiohttp.ClientSession:
    # limit=0: the connector must never be the queue being measured; workers bound the concurrency.
    connector = aiohttp.TCPConnector(limit=0, limit_per_host=0, keepalive_timeout=60)
    return aiohttp.ClientSession(
        connector=connector,
        timeout=aiohttp.ClientTimeout(total=timeout),
        # The same client key goes to every target; the direct upstream ignores it.
        headers={"content-type": "application/json", "authorization": f"Bearer {CLIENT_KEY}"},
    )


def _has_token(event: bytes, dialect: str = "openai") -> bool:
    """Whether one SSE event carries answer text, reasoning or a tool call (role-only chunks don't)."""
    if dialect == "anthropic":
        # text_delta / thinking_delta / input_json_delta all travel in content_block_delta events.
        return b"content_block_delta" in event
    if dialect == "responses":
        # output text, reasoning, function-call arguments, custom tool input: every kind is a `….delta`.
        return b"event: response." in event and b".delta\n" in event
    if dialect == "gemini":  # every event is a whole response; the last one may carry only the finish
        return b'"text":"' in event.replace(b'"text":""', b"") or b'"functionCall"' in event
    for line in event.split(b"\n"):
        if not line.startswith(b"data:"):
            continue
        payload = line[5:].strip()
        if not payload or payload == b"[DONE]":
            continue
        try:
            chunk = orjson.loads(payload)
        except orjson.JSONDecodeError:
            return False
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            if delta.get("content") or delta.get("reasoning_content") or delta.get("reasoning"):
                return True
            if delta.get("tool_calls"):
                return True
    return False


async def one_call(
    session: aiohttp.ClientSession, target: Target, body: bytes, stream: bool, t0: float
) -> Sample:
    """One whole call; `t0` is when the clock started (now, or the scheduled start in open loop)."""
    route = None
    url = target.url
    if target.dialect == "gemini":  # the method in the path says whether it streams
        head = url.rsplit(":", 1)[0]
        url = head + (":streamGenerateContent?alt=sse" if stream else ":generateContent")
    try:
        async with session.post(url, data=body, headers=target.headers) as resp:
            route = resp.headers.get("x-modelpool-route")
            if resp.status != 200:
                text = (await resp.read())[:200].decode(errors="replace")
                return Sample(
                    False, time.perf_counter() - t0, route=route, error=f"HTTP {resp.status}: {text}"
                )
            if not stream:
                data = await resp.read()
                t1 = time.perf_counter()
                marker = _ANSWER_MARKER[target.dialect]
                if marker not in data:
                    return Sample(False, t1 - t0, route=route, error=f"no answer: {data[:120]!r}")
                return Sample(True, t1 - t0, route=route)
            return await _read_stream(resp, t0, route, target.dialect)
    except (aiohttp.ClientError, TimeoutError) as exc:
        return Sample(False, time.perf_counter() - t0, route=route, error=f"{type(exc).__name__}: {exc}")


async def _read_stream(resp: aiohttp.ClientResponse, t0: float, route: str | None, dialect: str) -> Sample:
    ttft: float | None = None
    pending = b""
    tail = b""
    events = 0
    end = _END_MARKER[dialect]
    scan_end, seen_end = dialect in ("responses", "gemini"), False  # big terminal events
    crlf = dialect == "gemini"  # Google frames events with CRLF (the sim does too)
    async for chunk in resp.content.iter_any():
        now = time.perf_counter()  # before any parsing: the client's own work is not the server's delay
        if crlf:
            chunk = chunk.replace(b"\r\n", b"\n")
        if ttft is None:
            pending += chunk
            while ttft is None and (cut := pending.find(b"\n\n")) >= 0:
                event, pending = pending[:cut], pending[cut + 2 :]
                if _has_token(event, dialect):
                    ttft = now - t0
        # Event boundaries: every blank line, including one split across two reads.
        events += chunk.count(b"\n\n") + (tail[-1:] == b"\n" and chunk[:1] == b"\n")
        if scan_end and end in tail[-len(end) :] + chunk:
            seen_end = True  # Responses: the terminal event's data (the whole response) outgrows the tail
        tail = (tail + chunk)[-_TAIL:]
    t1 = time.perf_counter()
    if ttft is None:
        return Sample(False, t1 - t0, route=route, error="stream carried no content event", events=events)
    if not (seen_end if scan_end else end in tail):
        return Sample(
            False, t1 - t0, ttft, route, error=f"stream ended without {end.decode()}", events=events
        )
    return Sample(True, t1 - t0, ttft, route, events=events)


async def closed_block(
    session: aiohttp.ClientSession, target: Target, body: bytes, n: int, concurrency: int, stream: bool
) -> tuple[list[Sample], float]:
    """`n` calls by `concurrency` back-to-back workers. Returns the samples and the block's wall time."""
    remaining = n
    samples: list[Sample] = []

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            samples.append(await one_call(session, target, body, stream, time.perf_counter()))

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(min(concurrency, n))))
    return samples, time.perf_counter() - start


async def open_block(
    session: aiohttp.ClientSession,
    target: Target,
    body: bytes,
    n: int,
    rate: float,
    stream: bool,
    max_in_flight: int = 4096,
) -> tuple[list[Sample], float]:
    """`n` calls started at `rate` per second on a fixed schedule. Calls that would exceed
    `max_in_flight` are not sent and count as errors ("shed"): the server has already lost by then,
    and an unbounded backlog would only measure the load generator's memory."""
    loop = asyncio.get_running_loop()
    samples: list[Sample] = []
    tasks: set[asyncio.Task[None]] = set()

    async def timed(scheduled: float) -> None:
        samples.append(await one_call(session, target, body, stream, scheduled))

    start = time.perf_counter() + 0.005
    for i in range(n):
        due = start + i / rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        if len(tasks) >= max_in_flight:
            samples.append(Sample(False, time.perf_counter() - due, error="shed: too many calls in flight"))
            continue
        task = loop.create_task(timed(due))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if tasks:
        await asyncio.gather(*tasks)
    return samples, time.perf_counter() - start
