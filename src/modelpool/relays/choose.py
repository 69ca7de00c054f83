"""The relay of one client call, chosen per attempt (SPEC §1.6): native when the route speaks the
client's dialect, translated otherwise — one client stream (or body) whatever the walk does.

`CallStreamRelay` / `CallOnceRelay` are what the walk drives: `attempt(candidate)` prepares the upstream
request (`request.UpstreamRequest`), then hands the attempt to the client dialect's native relay or to the
translating relay, both writing to the same `ClientStream`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import orjson

from modelpool.aggregators import RoutingRecord
from modelpool.health.classify import FailureKind
from modelpool.hedge.race import RACER, Racer
from modelpool.protocols.loss import reply_drops
from modelpool.protocols.tokens import text_tokens
from modelpool.relays.anthropic import AnthropicStream
from modelpool.relays.client_stream import ClientStream
from modelpool.relays.gemini import GeminiStream
from modelpool.relays.native import Emit, NativeStream, Start
from modelpool.relays.once import NativeOnce, normalized_usage
from modelpool.relays.openai_chat import OpenAIStreamRelay
from modelpool.relays.request import Order, Prepared, UpstreamRequest
from modelpool.relays.responses import ResponsesStream
from modelpool.relays.translating import TranslatingOnce, TranslatingStreamRelay
from modelpool.routing.call import Call, Candidate
from modelpool.signers import SignatureScan
from modelpool.upstream.client import AttemptFailure, UpstreamClient
from modelpool.walk.walker import AttemptResult, WalkState

NATIVE_STREAMS: dict[str, type[NativeStream]] = {
    "openai": OpenAIStreamRelay,
    "anthropic": AnthropicStream,
    "responses": ResponsesStream,
    "gemini": GeminiStream,
}


class _Relay:
    """What the stream and once relays share: the request, the native 4xx to pass through, the record
    of which route produced a Responses id."""

    def __init__(
        self, call: Call, order: Order | None, forward: Mapping[Any, list[str]] | None, lossy: str
    ) -> None:
        self.call = call
        self.request = UpstreamRequest(call, order, forward, lossy)
        self.dropped: list[str] = []  # the serving attempt's request losses
        self.native_error: tuple[int, bytes] | None = None  # the last native request-error reply
        self.served_native = False
        self.served_route: str | None = None  # the route of the last attempt (the serving one at the end)

    def prepare(self, cand: Candidate) -> Prepared:
        self.served_route = cand.key
        prep = self.request.for_route(cand)
        self.dropped = prep.dropped
        return prep

    def note_failure(self, prep: Prepared, failure: AttemptFailure) -> None:
        """A native attempt's 4xx that is the request's own fault reaches the client unchanged when the
        walk ends on it (SPEC §1.6)."""
        if prep.native and failure.kind is FailureKind.REQUEST and failure.status and failure.body:
            self.native_error = (failure.status, failure.body)


class CallStreamRelay(_Relay):
    def __init__(
        self,
        call: Call,
        client: UpstreamClient,
        state: WalkState,
        start: Start,
        emit: Emit,
        order: Order | None = None,
        forward: Mapping[Any, list[str]] | None = None,
        lossy: str = "tools",
    ) -> None:
        super().__init__(call, order, forward, lossy)
        self.client = client
        self.state = state
        self.cs = ClientStream()
        self._start, self._emit = start, emit
        self._native: NativeStream | None = None
        self._translating: TranslatingStreamRelay | None = None
        self._last: NativeStream | TranslatingStreamRelay | None = None

    @property
    def started(self) -> bool:
        return self.cs.started

    @property
    def committed(self) -> bool:
        return self.cs.committed

    @property
    def routing(self) -> RoutingRecord | None:
        return self._last.routing if self._last is not None else None

    @property
    def usage(self) -> Any:
        return self._last.usage if self._last is not None else None

    async def attempt(self, cand: Candidate) -> AttemptResult:
        racer = RACER.get()
        if racer is not None:
            if not self.cs.started:
                return await self._racing(cand, racer)
            racer.race.closed = True  # the client saw an earlier attempt's reasoning: no hedge now
        prep = self.prepare(cand)
        self.state.dropped = list(prep.dropped)  # known before headers: x-modelpool-dropped
        relay = self._native_relay() if prep.native else self._translating_relay()
        self._last = relay
        self.served_native = prep.native
        try:
            return await relay.attempt(cand, prep)
        except AttemptFailure as failure:
            self.note_failure(prep, failure)
            raise
        finally:
            self.cs.last_native = prep.native

    async def _racing(self, cand: Candidate, racer: Racer) -> AttemptResult:
        """A hedge race's attempt (SPEC §3.7): its own relay and `ClientStream`, nothing reaches the client
        until it claims the race at its first event; the winner's relay and stream become the call's."""
        prep = self.request.for_route(cand)
        cs = ClientStream()
        won = False

        async def start(status: int, headers: list[tuple[bytes, bytes]]) -> None:
            nonlocal won
            if not won:
                await racer.claim()  # the loser never gets past this: it is being cancelled
                won = True
                self._adopt(cand, prep, cs, relay)
                # The headers were made before the race was decided: the walk state has the winner now.
                headers = [h for h in headers if not h[0].startswith(b"x-modelpool-")]
                headers += self.state.headers()
            await self._start(status, headers)

        relay: NativeStream | TranslatingStreamRelay
        if prep.native:
            native = NATIVE_STREAMS[self.call.ingress]
            relay = native(self.call, self.client, self.state, cs, start, self._emit)
        else:
            relay = TranslatingStreamRelay(self.call, self.client, self.state, cs, start, self._emit)
        try:
            return await relay.attempt(cand, prep)
        except AttemptFailure as failure:
            self.note_failure(prep, failure)
            raise
        except asyncio.CancelledError:
            if not won:  # a loser: billed for what its upstream reported so far (SPEC §14)
                self.state.add_usage(cand.key, _partial_usage(relay))
            raise
        finally:
            if won:
                cs.last_native = prep.native

    def _adopt(
        self, cand: Candidate, prep: Prepared, cs: ClientStream, relay: NativeStream | TranslatingStreamRelay
    ) -> None:
        self.cs = cs
        self._last = relay
        self.served_native = prep.native
        self.served_route = cand.key
        self.dropped = prep.dropped
        self.state.dropped = list(prep.dropped)
        self.state.effort = prep.effort  # both racers set it when they started
        if isinstance(relay, TranslatingStreamRelay):
            self._translating = relay
        else:
            self._native = relay

    def output_estimate(self) -> int:
        """Output tokens of the served attempt from its text, for a route that reported no usage."""
        relay = self._last
        if isinstance(relay, TranslatingStreamRelay):
            return (relay.t.end.chars + 3) // 4 if relay.t is not None else 0
        estimate = getattr(relay, "output_estimate", None)
        return int(estimate()) if estimate is not None else 0

    def produced(self) -> tuple[str, str] | None:
        """(id the client saw, id the upstream stored) of a natively served Responses stream."""
        relay = self._last
        if not self.served_native or not isinstance(relay, ResponsesStream) or relay.upstream_id is None:
            return None
        return (self.cs.response_id or relay.upstream_id, relay.upstream_id)

    def _native_relay(self) -> NativeStream:
        if self._native is None:
            cls = NATIVE_STREAMS[self.call.ingress]
            self._native = cls(self.call, self.client, self.state, self.cs, self._start, self._emit)
        return self._native

    def _translating_relay(self) -> TranslatingStreamRelay:
        if self._translating is None:
            self._translating = TranslatingStreamRelay(
                self.call, self.client, self.state, self.cs, self._start, self._emit
            )
        return self._translating

    def error_event(self, message: str, type: str, status: int) -> bytes | None:
        """The client-dialect error event that ends a started stream, from whichever relay wrote it."""
        if isinstance(self._last, TranslatingStreamRelay) and self._last.t is None:
            return None
        if self._last is not None:
            return self._last.error_event(message, type, status)
        return None


class CallOnceRelay(_Relay):
    def __init__(
        self,
        call: Call,
        client: UpstreamClient,
        order: Order | None = None,
        forward: Mapping[Any, list[str]] | None = None,
        lossy: str = "tools",
    ) -> None:
        super().__init__(call, order, forward, lossy)
        self.client = client
        self._native = NativeOnce(client)
        self._translating = TranslatingOnce(call, client)
        self.effort: str | None = None
        self._losers: list[tuple[str, dict[str, int] | None]] = []  # hedge losers' usage, billed too

    @property
    def routing(self) -> RoutingRecord | None:
        return self._native.routing if self.served_native else self._translating.routing

    @property
    def usage(self) -> Any:
        return self._native.usage if self.served_native else self._translating.usage

    @property
    def obj(self) -> Any:
        return self._native.obj if self.served_native else self._translating.obj

    async def attempt(self, cand: Candidate) -> AttemptResult:
        racer = RACER.get()
        if racer is not None:
            return await self._racing(cand, racer)
        prep = self.prepare(cand)
        self.effort = prep.effort
        self.served_native = prep.native
        relay = self._native if prep.native else self._translating
        try:
            result = await relay.attempt(cand.endpoint.aggregator, prep)
        except AttemptFailure as failure:
            self.note_failure(prep, failure)
            raise
        body = self._native.body if prep.native else self._translating.raw
        SignatureScan(cand.key, self.call.signed).feed(body)  # SPEC §3.10: who signed what
        return result

    async def _racing(self, cand: Candidate, racer: Racer) -> AttemptResult:
        """A hedge race's attempt, non-streamed: the race is on the whole answer — the first complete
        answer wins (docs/decisions.md) — read into the racer's own relay, adopted when it wins."""
        prep = self.request.for_route(cand)
        native, translating = NativeOnce(self.client), TranslatingOnce(self.call, self.client)
        try:
            if prep.native:
                result = await native.attempt(cand.endpoint.aggregator, prep)
            else:
                result = await translating.attempt(cand.endpoint.aggregator, prep)
        except AttemptFailure as failure:
            self.note_failure(prep, failure)
            raise
        try:
            await racer.claim()
        except asyncio.CancelledError:  # its whole answer came, a moment too late: billed all the same
            done = native if prep.native else translating
            self._losers.append((cand.key, normalized_usage(prep.dialect, done.usage)))
            raise
        self.effort, self.served_native, self.served_route = prep.effort, prep.native, cand.key
        if prep.native:
            self._native = native
        else:
            self._translating = translating
        SignatureScan(cand.key, self.call.signed).feed(native.body if prep.native else translating.raw)
        return result

    def output_estimate(self) -> int:
        """Output tokens of the served answer from its text, for a route that reported no usage."""
        return text_tokens(self.obj)

    def produced(self) -> tuple[str, str] | None:
        obj = self._native.obj
        if not self.served_native or not isinstance(obj, dict) or not isinstance(obj.get("id"), str):
            return None
        return (obj["id"], obj["id"])

    def final_body(self, state: WalkState) -> bytes:
        state.effort = self.effort
        for key, usage in self._losers:
            state.add_usage(key, usage)
        if not self.served_native:
            obj, upstream = self._translating.obj, self._translating.upstream
            state.dropped = _unique([*self.dropped, *reply_drops(obj, upstream, self.call.ingress)])
            return self._translating.final_body(state)
        state.dropped = list(self.dropped)  # a native request loses nothing but foreign signatures (§3.10)
        state.add_usage(None, normalized_usage(self._native.dialect, self._native.usage))
        notice = state.notice()
        if notice is not None and self.call.ingress == "openai" and isinstance(self._native.obj, dict):
            from modelpool.protocols import openai_chat as oc

            return with_metadata(oc.prepend_content(self._native.obj, notice), state.metadata())
        return with_metadata(self._native.body, state.metadata())


def _partial_usage(relay: NativeStream | TranslatingStreamRelay) -> dict[str, int] | None:
    if isinstance(relay, TranslatingStreamRelay):
        return relay.t.end.usage if relay.t is not None else None
    return relay.reported_usage()


def with_metadata(body: bytes, meta: dict[str, Any]) -> bytes:
    """A native body with the `modelpool` metadata (SPEC §1.1, §14) written in as its last field: the
    upstream's bytes stay as they came, the field is spliced in before the closing brace."""
    end = body.rstrip()
    if not end.endswith(b"}"):
        return body
    head = end[:-1].rstrip()
    sep = b"" if head.endswith(b"{") else b","
    return head + sep + b'"modelpool":' + orjson.dumps(meta) + b"}"


def _unique(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))


def once_relay(
    call: Call,
    client: UpstreamClient,
    order: Order | None,
    forward: Mapping[Any, list[str]] | None = None,
    lossy: str = "tools",
) -> CallOnceRelay:
    return CallOnceRelay(call, client, order, forward, lossy)


def stream_relay(
    call: Call,
    client: UpstreamClient,
    state: WalkState,
    start: Start,
    emit: Emit,
    order: Order | None,
    forward: Mapping[Any, list[str]] | None = None,
    lossy: str = "tools",
) -> CallStreamRelay:
    return CallStreamRelay(call, client, state, start, emit, order, forward, lossy)
