"""Relays for walks that cross dialects (SPEC §1.1, §4): any ingress on any route kind.

The client speaks OpenAI chat, Anthropic Messages or Responses; a route speaks OpenAI-compatible chat or
Anthropic. `StreamTranslator` keeps ONE client stream coherent across attempts, even when the walk fails
over from an Anthropic route to an OpenAI-compatible one before the commit point. The pure OpenAI→OpenAI
walk keeps its byte-faithful relay (`openai_relay`); everything else goes through here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import aiohttp
import orjson

from modelpool.aggregators import RoutingRecord, find_routing, inject_order
from modelpool.health.classify import FailureKind
from modelpool.protocols.effort import nearest_effort, write_effort
from modelpool.protocols.errors import ClientError
from modelpool.protocols.mapping import usage_from_anthropic, usage_from_openai
from modelpool.protocols.sse import SSEParser
from modelpool.protocols.translate_body import MalformedUpstreamBody, translate_body
from modelpool.protocols.translate_request import (
    anthropic_to_openai,
    drop_unsigned_thinking,
    openai_to_anthropic,
)
from modelpool.protocols.translate_responses import responses_to_anthropic, responses_to_openai
from modelpool.protocols.translate_stream import StreamTranslator, UpstreamStreamError
from modelpool.routing.call import Call, Candidate
from modelpool.upstream.client import AttemptFailure, UpstreamClient
from modelpool.walk.openai_relay import SSE_HEADERS, Emit, Order, Start, encode_request, upstream_headers
from modelpool.walk.streaming import UpstreamReads, drain, in_stream_failure_kind, read_body, stream_result
from modelpool.walk.walker import AttemptResult, CommittedFailure, WalkState

_TRANSLATE: dict[tuple[str, str], Callable[[dict[str, Any]], dict[str, Any]]] = {
    ("openai", "anthropic"): openai_to_anthropic,
    ("anthropic", "openai"): lambda body: anthropic_to_openai(body, keep_signatures=False),
    ("responses", "openai"): responses_to_openai,
    ("responses", "anthropic"): responses_to_anthropic,
}


def dialect_of(cand: Candidate) -> str:
    return "anthropic" if cand.endpoint.speaks_anthropic else "openai"


class UpstreamRequest:
    """The call's request in each upstream dialect, translated once per dialect, adapted per attempt."""

    def __init__(self, call: Call, order: Order | None) -> None:
        self.call = call
        self._order = order
        self._by_dialect: dict[str, dict[str, Any]] = {}

    def for_route(self, cand: Candidate) -> tuple[str, bytes, str | None]:
        """(url, body, effort used) for one attempt on `cand`."""
        target = dialect_of(cand)
        base = self._by_dialect.get(target)
        if base is None:
            try:
                base = self._by_dialect[target] = self._translate(target)
            except ClientError as err:
                # The request cannot be carried into this route's dialect (e.g. an unknown content part):
                # the request's fault, not the route's — another route may still take it as it is.
                raise AttemptFailure(FailureKind.REQUEST, err.message, status=err.status) from None
        body = dict(base)
        body["model"] = cand.route.model_id
        effort = nearest_effort(self.call.effort, cand.route.capabilities.efforts)
        if self.call.effort is not None:
            body = write_effort(target, body, effort, cand.route.capabilities.efforts)
        if target == "openai" and self.call.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}  # usage is produced even across translation
        else:
            body["stream"] = self.call.stream
        if self._order is not None and cand.endpoint.aggregator:
            inner = self._order(self.call, cand)
            if inner:
                body = inject_order(body, cand.endpoint.kind, inner) or body
        url = cand.endpoint.messages_url if target == "anthropic" else cand.endpoint.chat_url
        return url, encode_request(body), effort

    def _translate(self, target: str) -> dict[str, Any]:
        src = self.call.ingress
        body = dict(self.call.body) if src == target else _TRANSLATE[(src, target)](self.call.body)
        if target == "anthropic":
            # Reasoning that another (non-Anthropic) route produced earlier in the conversation carries no
            # signature; Anthropic rejects such thinking blocks, so they do not go upstream.
            body = drop_unsigned_thinking(body)
        return body


class TranslatingStreamRelay:
    """Streaming walk in any (client, upstream) pair: one translator for the whole call."""

    def __init__(
        self,
        call: Call,
        client: UpstreamClient,
        state: WalkState,
        start: Start,
        emit: Emit,
        order: Order | None = None,
        input_tokens: int = 0,
    ) -> None:
        self.call = call
        self.client = client
        self.state = state
        self._start = start
        self._emit = emit
        self.request = UpstreamRequest(call, order)
        include_usage = bool((call.body.get("stream_options") or {}).get("include_usage"))
        self.t: StreamTranslator | None = None
        self._translator_args = {
            "model": call.requested_model,
            "include_usage": include_usage,
            "request": call.body if call.ingress == "responses" else None,
            "input_tokens": input_tokens,
        }
        self.started = False
        self.routing: RoutingRecord | None = None

    @property
    def committed(self) -> bool:
        return self.t is not None and self.t.committed

    async def attempt(self, cand: Candidate) -> AttemptResult:
        target = dialect_of(cand)
        if self.t is None:
            self.t = StreamTranslator(self.call.ingress, target, **self._translator_args)  # type: ignore[arg-type]
        else:
            self.t.reset_upstream(target)  # the walk only retries before the commit point
        url, body, effort = self.request.for_route(cand)
        self.state.effort = effort
        t0 = time.monotonic()
        resp = await self._open(url, cand, body)
        try:
            result = await self._relay(resp, t0)
        except AttemptFailure as failure:
            resp.close()
            if self.committed:
                assert self.t is not None
                await self._emit(self.t.error(cand.endpoint.redact(failure.message)))
                raise CommittedFailure(failure) from None
            raise
        except BaseException:
            resp.close()
            raise
        await drain(resp)
        return result

    async def _open(self, url: str, cand: Candidate, body: bytes) -> aiohttp.ClientResponse:
        try:
            async with asyncio.timeout(self.client.timeouts.first_byte):
                return await self.client.post(url, upstream_headers(self.call, cand), body)
        except TimeoutError:
            raise AttemptFailure(FailureKind.NETWORK, "timeout waiting for the upstream response") from None

    async def _relay(self, resp: aiohttp.ClientResponse, t0: float) -> AttemptResult:
        t = self.t
        assert t is not None
        parser = SSEParser()
        reads = UpstreamReads.start(resp.content, self.client.timeouts)
        try:
            return await self._pump(t, reads, parser, t0)
        finally:
            reads.close()

    async def _pump(
        self, t: StreamTranslator, reads: UpstreamReads, parser: SSEParser, t0: float
    ) -> AttemptResult:
        first_at: float | None = None
        while True:
            data = await reads.read(before_first=first_at is None)
            out: list[bytes] = []
            try:
                for ev in parser.feed(data) if data else parser.close():
                    out.append(t.feed(ev))
                    if first_at is None and t.meaningful:
                        first_at = time.monotonic()
                    if t.upstream_done:
                        break
            except UpstreamStreamError as exc:
                await self._send(out)
                raise AttemptFailure(in_stream_failure_kind(str(exc)), str(exc)) from None
            if t.upstream_done:
                self.routing = find_routing(t.upstream_extra) or self.routing
                self.state.add_usage(None, t.usage)
                t.set_metadata(self.state.metadata())
                out.append(t.finish())
                await self._send(out, final=True)
                return stream_result(t0, first_at, t.usage)
            await self._send(out)
            if not data:
                raise AttemptFailure(FailureKind.NETWORK, "upstream stream ended without its terminator")

    async def _send(self, out: list[bytes], final: bool = False) -> None:
        data = b"".join(out)
        if not data:
            return
        t = self.t
        assert t is not None
        if not self.started:
            if not (t.meaningful or final):
                return  # nothing but markup yet; the translator emits nothing before meaning anyway
            self.started = True
            await self._start(200, SSE_HEADERS + self.state.headers())
        await self._emit(data)


class TranslatingOnceRelay:
    """Non-streaming walk across dialects: the whole answer is read, then re-shaped for the client."""

    def __init__(self, call: Call, client: UpstreamClient, order: Order | None = None) -> None:
        self.call = call
        self.client = client
        self.request = UpstreamRequest(call, order)
        self.obj: dict[str, Any] | None = None
        self.upstream: str = "openai"
        self.routing: RoutingRecord | None = None
        self.effort: str | None = None

    async def attempt(self, cand: Candidate) -> AttemptResult:
        url, body, self.effort = self.request.for_route(cand)
        t0 = time.monotonic()
        try:
            async with asyncio.timeout(self.client.timeouts.response):
                resp = await self.client.post(url, upstream_headers(self.call, cand), body)
                try:
                    raw = await read_body(resp, self.client.timeouts.idle)
                finally:
                    resp.close()
        except TimeoutError:
            raise AttemptFailure(FailureKind.NETWORK, "timeout waiting for the upstream answer") from None
        except (aiohttp.ClientError, ConnectionError) as exc:
            raise AttemptFailure(FailureKind.NETWORK, f"{type(exc).__name__}: {exc}") from None
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise AttemptFailure(
                FailureKind.SERVER, f"upstream answered 200 with a non-JSON body: {raw[:200]!r}"
            ) from None
        self.upstream = dialect_of(cand)
        self.obj = obj
        try:  # validate now, so a 200 that is not a reply fails this attempt (and the walk moves on)
            translate_body(obj, self.upstream, self.call.ingress, model=self.call.requested_model)
        except MalformedUpstreamBody as exc:
            raise AttemptFailure(FailureKind.SERVER, str(exc)) from None
        self.routing = find_routing(obj) if cand.endpoint.aggregator else None
        usage = obj.get("usage") if isinstance(obj, dict) else None
        tokens = (usage or {}).get("completion_tokens") or (usage or {}).get("output_tokens")
        elapsed = time.monotonic() - t0
        tps = tokens / elapsed if isinstance(tokens, int) and tokens > 1 and elapsed > 0 else None
        return AttemptResult(ttft=elapsed, tokens_per_s=tps)

    def final_body(self, state: WalkState) -> bytes:
        assert self.obj is not None
        state.effort = self.effort
        usage = self.obj.get("usage")
        state.add_usage(
            None, (usage_from_anthropic if self.upstream == "anthropic" else usage_from_openai)(usage)
        )
        out = translate_body(
            self.obj,
            self.upstream,
            self.call.ingress,
            model=self.call.requested_model,
            request=self.call.body if self.call.ingress == "responses" else None,
            meta=state.metadata(),
        )
        notice = state.notice()
        if notice is not None:
            _prepend_notice(out, self.call.ingress, notice)
        return orjson.dumps(out)


def _prepend_notice(obj: dict[str, Any], dialect: str, notice: str) -> None:
    if dialect == "anthropic":
        obj["content"] = [{"type": "text", "text": notice}, *(obj.get("content") or [])]
    elif dialect == "openai":
        for choice in obj.get("choices") or []:
            message = choice.get("message") or {}
            message["content"] = notice + (message.get("content") or "")
