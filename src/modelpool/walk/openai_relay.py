"""Relay of OpenAI Chat Completions from an OpenAI-compatible route to an OpenAI client (SPEC §4).

Bytes go out as they arrive. The relay holds back only two kinds of event: pure markup before the
first reasoning/answer event (so a route that dies right after its role chunk leaves no trace and the
response headers name the route that really answers), and the final chunk(s), which wait for `[DONE]`
so the `modelpool` metadata can ride on the last one. Answer text is never held.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import orjson

from modelpool.aggregators import RoutingRecord, find_routing, inject_order
from modelpool.health.classify import FailureKind, classify
from modelpool.protocols import openai_chat as oc
from modelpool.protocols.effort import nearest_effort, write_effort
from modelpool.protocols.sse import SSEEvent, SSEParser
from modelpool.routing.call import Call, Candidate
from modelpool.upstream.client import AttemptFailure, UpstreamClient
from modelpool.walk.streaming import UpstreamReads, drain, in_stream_failure_kind, read_body, stream_result
from modelpool.walk.walker import AttemptResult, CommittedFailure, WalkState

Emit = Callable[[bytes], Awaitable[None]]
Start = Callable[[int, list[tuple[bytes, bytes]]], Awaitable[None]]

SSE_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]
JSON_HEADERS = [(b"content-type", b"application/json")]


Order = Callable[[Call, Candidate], list[str] | None]


def upstream_headers(call: Call, cand: Candidate) -> tuple[tuple[str, str], ...]:
    """The provider's auth headers; aggregators also get the conversation's id so their own session
    affinity follows conversations rather than a fingerprint of the first message (two subagents opening
    with the same prompt would otherwise share one aggregator pin)."""
    if cand.endpoint.aggregator and call.session_id and not call.session_id.startswith("fp-"):
        return (*cand.endpoint.headers, ("x-session-id", call.session_id), *call.trace_headers)
    return (*cand.endpoint.headers, *call.trace_headers) if call.trace_headers else cand.endpoint.headers


def route_effort(call: Call, cand: Candidate) -> str | None:
    """SPEC §3.1 step 9: the requested effort mapped to the route's nearest tier."""
    return nearest_effort(call.effort, cand.route.capabilities.efforts)


def upstream_body(call: Call, cand: Candidate, order: Order | None = None) -> bytes:
    body = dict(call.body)
    body["model"] = cand.route.model_id
    if call.effort is not None:
        body = write_effort("openai", body, route_effort(call, cand), cand.route.capabilities.efforts)
    if order is not None and cand.endpoint.aggregator:
        # fastcel: the inner providers fastest first (SPEC §6); a body that carries its own routing, or
        # stats that are unavailable, leave the request as the client sent it.
        inner = order(call, cand)
        if inner:
            body = inject_order(body, cand.endpoint.kind, inner) or body
    return encode_request(body)


def encode_request(body: dict[str, Any]) -> bytes:
    """The upstream request body. orjson decodes JSON nested up to 1024 levels but encodes only 254: a
    deeper client body is the request's fault (a 400 for the client), not a 500 nor the route's fault."""
    try:
        return orjson.dumps(body)
    except orjson.JSONEncodeError as exc:
        raise AttemptFailure(
            FailureKind.REQUEST, f"request body cannot be encoded: {exc}", status=400
        ) from None


class OpenAIStreamRelay:
    """One instance per client call; `attempt` is called once per upstream attempt by the walker."""

    def __init__(
        self,
        call: Call,
        client: UpstreamClient,
        state: WalkState,
        start: Start,
        emit: Emit,
        order: Order | None = None,
    ) -> None:
        self.call = call
        self.client = client
        self.state = state
        self._order = order
        self.routing: RoutingRecord | None = None  # the aggregator's record of who served
        self._start = start
        self._emit = emit
        self.started = False  # response headers sent
        self.committed = False  # answer content sent: no retry, no switch from here on
        self.usage: Any = None
        self._aggregator = False  # the current attempt's route writes routing records
        self._first_at: float | None = None  # the current attempt's first reasoning/answer event

    async def attempt(self, cand: Candidate) -> AttemptResult:
        t0 = time.monotonic()
        self._aggregator = cand.endpoint.aggregator
        resp = await self._open(cand)
        try:
            result = await self._relay(resp, t0)
        except AttemptFailure as failure:
            resp.close()
            if self.committed:
                await self._emit(oc.stream_error_event(cand.endpoint.redact(failure.message)))
                raise CommittedFailure(failure) from None
            raise
        except BaseException:
            resp.close()  # closes the connection at once: a cancelled call stops the upstream too
            raise
        await drain(resp)
        return result

    async def _open(self, cand: Candidate) -> aiohttp.ClientResponse:
        timeouts = self.client.timeouts
        self.state.effort = route_effort(self.call, cand)
        try:
            async with asyncio.timeout(timeouts.first_byte):
                return await self.client.post(
                    cand.endpoint.chat_url,
                    upstream_headers(self.call, cand),
                    upstream_body(self.call, cand, self._order),
                )
        except TimeoutError:
            raise AttemptFailure(FailureKind.NETWORK, "timeout waiting for the upstream response") from None

    async def _relay(self, resp: aiohttp.ClientResponse, t0: float) -> AttemptResult:
        parser = SSEParser()
        held: list[bytes] = []  # markup before the first meaningful event
        tail: list[oc.ChunkInfo] = []  # final/usage chunks waiting for [DONE]
        # Everything one upstream read yields goes out in one write: a socket write per event cost more
        # CPU than the rest of the relay (measured in bench/RESULTS.md).
        out: list[bytes] = []
        self._first_at = None
        reads = UpstreamReads.start(resp.content, self.client.timeouts)
        try:
            while True:
                data = await reads.read(before_first=self._first_at is None)
                if not data:
                    for last in parser.close():
                        if await self._on_event(last, held, tail, out):
                            return stream_result(t0, self._first_at, self.usage)
                    raise AttemptFailure(FailureKind.NETWORK, "upstream stream ended without [DONE]")
                if self.committed and not parser.pending:
                    end = oc.plain_prefix(data)
                    if end == len(data):
                        await self._emit(data)  # the usual read at model speed: whole plain chunks only
                        continue
                    if end:
                        out.append(data[:end])  # the plain run before a final chunk or [DONE]
                        data = data[end:]
                events = parser.feed_lazy(data)
                while True:
                    if self.committed:  # whole non-final chunks after the commit point go as they came
                        end = oc.plain_prefix(events.data, events.pos)
                        if end > events.pos:
                            out.append(events.take(end))
                    ev = events.next()
                    if ev is None:
                        break
                    if await self._on_event(ev, held, tail, out):
                        return stream_result(t0, self._first_at, self.usage)
                await self._flush(out)
        finally:
            reads.close()
            await self._flush(out)  # content that arrived before a failure still reaches the client

    async def _on_event(
        self, ev: SSEEvent, held: list[bytes], tail: list[oc.ChunkInfo], out: list[bytes]
    ) -> bool:
        """One event the whole-run path did not take; True at `[DONE]` (the reply is complete)."""
        if ev.is_done:
            await self._finish(held, tail, out)
            return True
        if self.committed and any(m in ev.data for m in oc.NOT_FINAL_MARKERS):
            out.append(ev.raw)  # e.g. the spaced marker: still no JSON parse after the commit point
            return False
        info = oc.inspect(ev.data)
        if info.error is not None:
            raise self._stream_failure(info.error)
        if info.final and not info.content:
            tail.append(info)
            return False
        if info.meaningful and self._first_at is None:
            self._first_at = time.monotonic()
        await self._forward(ev.raw, info, held, out)
        return False

    async def _flush(self, out: list[bytes]) -> None:
        if out:
            data = out[0] if len(out) == 1 else b"".join(out)
            out.clear()
            await self._emit(data)

    async def _forward(self, raw: bytes, info: oc.ChunkInfo, held: list[bytes], out: list[bytes]) -> None:
        if not info.meaningful:
            (out if self.started else held).append(raw)
            return
        await self._ensure_started()
        if held:
            out.extend(held)
            held.clear()
        if info.content and not self.committed:
            self.committed = True
            notice = self.state.notice()
            if notice is not None:
                out.append(oc.content_chunk(info.obj, notice))
        out.append(raw)

    async def _ensure_started(self) -> None:
        if not self.started:
            self.started = True
            await self._start(200, SSE_HEADERS + self.state.headers())

    async def _finish(self, held: list[bytes], tail: list[oc.ChunkInfo], out: list[bytes]) -> None:
        await self._ensure_started()
        self.committed = True
        out.extend(held)
        for i, info in enumerate(tail):
            if info.usage:
                self.usage = info.usage
            if self._aggregator:  # read only: the bytes stay as sent
                self.routing = find_routing(info.obj) or self.routing
            if i == len(tail) - 1:
                out.append(oc.with_metadata(info.obj, self.state.metadata()))
            else:
                out.append(b"data: " + orjson.dumps(info.obj) + b"\n\n")
        out.append(b"data: [DONE]\n\n")

    def _stream_failure(self, error: Any) -> AttemptFailure:
        message = error.get("message") if isinstance(error, dict) else None
        if not isinstance(message, str):
            message = orjson.dumps(error).decode()
        return AttemptFailure(in_stream_failure_kind(message), f"upstream error in stream: {message}")


class OpenAIOnceRelay:
    """Non-streaming: the answer is read whole, so every failure is before the commit point."""

    def __init__(self, call: Call, client: UpstreamClient, order: Order | None = None) -> None:
        self.call = call
        self.client = client
        self._order = order
        self.routing: RoutingRecord | None = None
        self.body: bytes = b""
        self.obj: Any = None

    def final_body(self, state: WalkState) -> bytes:
        """The upstream body as received, unless an inline switch notice must go before the answer."""
        if state.current is not None:
            state.effort = route_effort(self.call, state.current)
        notice = state.notice()
        if notice is None or not isinstance(self.obj, dict):
            return self.body
        return oc.prepend_content(self.obj, notice)

    async def attempt(self, cand: Candidate) -> AttemptResult:
        t0 = time.monotonic()
        try:
            async with asyncio.timeout(self.client.timeouts.response):
                resp = await self.client.post(
                    cand.endpoint.chat_url,
                    upstream_headers(self.call, cand),
                    upstream_body(self.call, cand, self._order),
                )
                try:
                    body = await read_body(resp, self.client.timeouts.idle)
                finally:
                    resp.close()
        except TimeoutError:
            raise AttemptFailure(FailureKind.NETWORK, "timeout waiting for the upstream answer") from None
        except (aiohttp.ClientError, ConnectionError) as exc:
            raise AttemptFailure(FailureKind.NETWORK, f"{type(exc).__name__}: {exc}") from None
        ok, obj = oc.response_has_choices(body)
        if not ok:
            raise self._bad_body(obj, body)
        self.body = body
        self.obj = obj
        # Only aggregators write routing records: a direct provider's body is not searched for one.
        self.routing = find_routing(obj) if cand.endpoint.aggregator else None
        elapsed = time.monotonic() - t0
        tokens = (obj.get("usage") or {}).get("completion_tokens") if isinstance(obj, dict) else None
        tps = tokens / elapsed if isinstance(tokens, int) and tokens > 1 and elapsed > 0 else None
        return AttemptResult(ttft=elapsed, tokens_per_s=tps)

    @staticmethod
    def _bad_body(obj: Any, body: bytes) -> AttemptFailure:
        if isinstance(obj, dict) and obj.get("error"):
            err = obj["error"]
            message = err.get("message") if isinstance(err, dict) else None
            message = message if isinstance(message, str) else orjson.dumps(err).decode()
            kind = classify(None, message)
            return AttemptFailure(FailureKind.SERVER if kind is FailureKind.REQUEST else kind, message)
        return AttemptFailure(
            FailureKind.SERVER, f"upstream answered 200 without a completion: {body[:200]!r}"
        )
