"""Relays for attempts that must translate (SPEC §1.6): the route cannot speak the client's dialect.

`StreamTranslator` keeps the client's stream coherent across translated attempts, even when the walk fails
over from an Anthropic route to an OpenAI-compatible one before the commit point; `ClientStream` hands the
stream over to and from native attempts (`continuity`).
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from modelpool.aggregators import RoutingRecord, find_routing
from modelpool.health.classify import FailureKind
from modelpool.protocols.sse import SSEParser
from modelpool.protocols.translate_body import MalformedUpstreamBody, translate_body
from modelpool.protocols.translate_stream import StreamTranslator, UpstreamStreamError
from modelpool.relays.client_stream import ClientStream
from modelpool.relays.continuity import resume_encoder, suspend_encoder
from modelpool.relays.native import SSE_HEADERS, Emit, Start, open_stream
from modelpool.relays.once import bad_body, normalized_usage, once_result, post_and_read
from modelpool.relays.reads import UpstreamReads, drain, in_stream_failure_kind, stream_result
from modelpool.relays.request import Prepared
from modelpool.routing.call import Call, Candidate
from modelpool.signers import SignatureScan
from modelpool.upstream.client import AttemptFailure, UpstreamClient
from modelpool.upstream.http1 import Response
from modelpool.walk.walker import AttemptResult, CommittedFailure, WalkState


class TranslatingStreamRelay:
    """Streaming walk in any (client, upstream) pair: one translator for the whole call."""

    def __init__(
        self,
        call: Call,
        client: UpstreamClient,
        state: WalkState,
        cs: ClientStream,
        start: Start,
        emit: Emit,
    ) -> None:
        self.call = call
        self.client = client
        self.state = state
        self.cs = cs
        self._start = start
        self._emit = emit
        self._scan = SignatureScan("", call.signed)
        include_usage = bool((call.body.get("stream_options") or {}).get("include_usage"))
        self.t: StreamTranslator | None = None
        self._translator_args = {
            "model": call.requested_model,
            "include_usage": include_usage,
            "request": call.body if call.ingress == "responses" else None,
            "input_tokens": call.est_tokens,
        }
        self.routing: RoutingRecord | None = None
        self.usage: Any = None
        self.route_key: str | None = None

    @property
    def started(self) -> bool:
        return self.cs.started

    @property
    def committed(self) -> bool:
        return self.cs.committed

    def error_event(self, message: str, type: str = "api_error", status: int = 502) -> bytes:
        assert self.t is not None
        return self.t.error(message, type, status)

    def _translator(self, target: str) -> StreamTranslator:
        if self.t is None:
            self.t = StreamTranslator(self.call.ingress, target, **self._translator_args)  # type: ignore[arg-type]
        else:
            self.t.reset_upstream(target)  # the walk only moves on before the commit point
        resume_encoder(self.t.enc, self.cs)  # continue what a native attempt may have sent
        return self.t

    async def attempt(self, cand: Candidate, prep: Prepared) -> AttemptResult:
        t = self._translator(prep.dialect)
        self.state.effort = prep.effort
        self._scan = SignatureScan(cand.key, self.call.signed)  # SPEC §3.10: who signed what
        self.route_key = cand.key  # usage is priced at this route's price (a hedge's winner may finish
        # its whole answer before its claim makes it the walk's current route)
        t0 = time.monotonic()
        try:
            resp = await open_stream(self.client, prep)
            try:
                result = await self._relay(resp, t0, prep.timeouts)
            except AttemptFailure as failure:
                resp.close()
                if t.committed:
                    self.cs.committed = True
                    await self._emit(t.error(cand.endpoint.redact(failure.message)))
                    raise CommittedFailure(failure) from None
                raise
            except BaseException:
                resp.close()
                raise
        finally:
            suspend_encoder(t.enc, self.cs)
        await drain(resp)
        return result

    async def _relay(self, resp: Response, t0: float, limits: Any = None) -> AttemptResult:
        t = self.t
        assert t is not None
        parser = SSEParser()
        reads = UpstreamReads.start(resp.content, limits or self.client.timeouts)
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
            self._scan.feed(data)
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
                self.usage = t.usage
                self.state.add_usage(self.route_key, t.usage)
                if t.dropped:  # reply parts the client's dialect cannot express (citations, server tools)
                    self.state.dropped = list(dict.fromkeys([*self.state.dropped, *t.dropped]))
                # Start the client stream before the metadata is read: a hedge race (SPEC §3.7) is
                # decided at the start, and the metadata names its outcome.
                await self._send(out, final=True)
                t.set_metadata(self.state.metadata())
                self.cs.complete()  # before the terminator goes out (ClientStream.on_complete)
                await self._send([t.finish()], final=True)
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
        if t.committed:
            self.cs.committed = True
        if not self.cs.started:
            if not (t.meaningful or final):
                return  # nothing but markup yet; the translator emits nothing before meaning anyway
            self.cs.started = True
            await self._start(200, SSE_HEADERS + self.state.headers())
        await self._emit(data)


class TranslatingOnce:
    """A non-streamed attempt across dialects: the whole answer is read, then re-shaped for the client."""

    def __init__(self, call: Call, client: UpstreamClient) -> None:
        self.call = call
        self.client = client
        self.obj: dict[str, Any] | None = None
        self.upstream: str = "openai"
        self.routing: RoutingRecord | None = None
        self.raw = b""  # the upstream's body (its signatures are read by the call's relay)

    async def attempt(self, aggregator: bool, prep: Prepared) -> AttemptResult:
        t0 = time.monotonic()
        raw = await post_and_read(self.client, prep)
        self.raw = raw
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise AttemptFailure(
                FailureKind.SERVER, f"upstream answered 200 with a non-JSON body: {raw[:200]!r}"
            ) from None
        if isinstance(obj, dict) and obj.get("error"):
            raise bad_body(obj, raw)
        self.upstream = prep.dialect
        try:  # validate now, so a 200 that is not a reply fails this attempt (and the walk moves on)
            translate_body(obj, self.upstream, self.call.ingress, model=self.call.requested_model)
        except MalformedUpstreamBody as exc:
            raise AttemptFailure(FailureKind.SERVER, str(exc)) from None
        self.obj = obj
        self.routing = find_routing(obj) if aggregator else None
        return once_result(t0, normalized_usage(self.upstream, self.usage))

    @property
    def usage(self) -> Any:
        """The reply's own usage object (Gemini's is `usageMetadata`)."""
        if not isinstance(self.obj, dict):
            return None
        return self.obj.get("usageMetadata" if self.upstream == "gemini" else "usage")

    def final_body(self, state: WalkState) -> bytes:
        assert self.obj is not None
        state.add_usage(None, normalized_usage(self.upstream, self.usage))
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
