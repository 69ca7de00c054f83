"""The client API (SPEC §1.1): `/v1/chat/completions`, `/v1/messages` (+ `count_tokens`), `/v1/responses`.

One handler for the three dialects; an `Ingress` says how each parses requests and renders errors. The
walk's relay is chosen per call: a pure OpenAI→OpenAI walk keeps the byte-faithful relay, anything that
crosses dialects goes through the translating relay (one coherent client stream across attempts).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from modelpool.keys import ClientKey, Refused
from modelpool.observe import CallTrace
from modelpool.protocols import anthropic as an
from modelpool.protocols import openai_chat as oc
from modelpool.protocols import responses as rs
from modelpool.protocols.errors import ClientError, WalkFailed
from modelpool.protocols.overflow import (
    ContextOverflow,
    already_said,
    fill,
    overflow_body,
    parse_overflow,
)
from modelpool.relays.choose import CallStreamRelay, once_relay, stream_relay
from modelpool.relays.count_tokens import count_tokens as relay_count_tokens
from modelpool.routing.call import Call
from modelpool.routing.windows import overflow, pool_windows
from modelpool.server.asgi import DisconnectWatch, Receive, Scope, Send, header_map, read_body, send_bytes
from modelpool.walk.walker import CommittedFailure

if TYPE_CHECKING:
    from modelpool.engine import Engine


@dataclass(frozen=True, slots=True)
class Ingress:
    name: str
    parse: Callable[[bytes], dict[str, Any]]
    client_error: Callable[[ClientError], bytes]
    walk_failed: Callable[[WalkFailed], bytes]
    stream_error: Callable[[str, str], bytes]


INGRESSES = {
    "openai": Ingress(
        "openai", oc.parse_request, oc.client_error_body, oc.walk_failed_body, oc.stream_error_event
    ),
    "anthropic": Ingress(
        "anthropic",
        an.parse_request,
        an.client_error_body,
        an.walk_failed_body,
        lambda message, type: an.stream_error_event(message, an.error_type_for(type, 502)),
    ),
    "responses": Ingress(
        "responses", rs.parse_request, rs.client_error_body, rs.walk_failed_body, oc.stream_error_event
    ),
}


def client_key_ok(gw: Engine, headers: dict[str, str]) -> bool:
    return gw.accounts.authenticate(headers) is not None  # plain strings and key objects (SPEC §14)


async def handle_call(gw: Engine, ingress: Ingress, scope: Scope, receive: Receive, send: Send) -> None:
    headers = header_map(scope)
    trace = gw.observer.begin(ingress.name, headers)
    try:
        await _serve(gw, ingress, trace, headers, receive, send)
    except asyncio.CancelledError:
        trace.status, trace.outcome = 499, "cancelled"
        raise
    except Exception:
        trace.status, trace.outcome = 500, "error"
        raise
    finally:
        gw.observer.done(trace)  # the call's metrics and its one log line, whatever the outcome


async def _serve(
    gw: Engine, ingress: Ingress, trace: CallTrace, headers: dict[str, str], receive: Receive, send: Send
) -> None:
    try:
        key = gw.accounts.authenticate(headers)
        if key is None:
            raise ClientError(401, "invalid or missing API key", type="authentication_error")
        body = await read_body(receive, headers, gw.runtime.config.server.max_body)
        call = gw.prepare(ingress.name, ingress.parse(body), headers, body)
        too_long = overflow(gw.runtime, call)
        if too_long is not None:  # SPEC §1.7: over every route's window, refused without an attempt
            raise ContextOverflow(*too_long)
        if isinstance(key, ClientKey):
            trace.key = key.label
            if key.limited:  # SPEC §14: refused here, before any upstream attempt
                trace.ticket = await gw.accounts.admit(key, call, len(body))
    except ClientError as err:
        trace.status, trace.outcome = err.status, "rejected"
        if isinstance(err, Refused):  # a key's limit (SPEC §14): type, limit and reset in the body
            await send_bytes(send, err.status, err.body(ingress.name), [trace.header, *err.headers()])
            return
        if isinstance(err, ContextOverflow):
            trace.outcome = "overflow"
            await send_bytes(send, 400, overflow_body(ingress.name, err.tokens, err.maximum), [trace.header])
            return
        await send_bytes(send, err.status, ingress.client_error(err), [trace.header])
        return
    trace.call = call
    watch = DisconnectWatch(receive)
    try:
        if call.stream:
            await _stream(gw, ingress, call, send, watch, trace)
        else:
            await _once(gw, ingress, call, send, watch, trace)
    except asyncio.CancelledError:
        if not watch.disconnected:
            raise
        # The client left: the walk is over and the upstream connection was closed by the relay.
        current = asyncio.current_task()
        if current is not None:
            current.uncancel()
        trace.status, trace.outcome = 499, "cancelled"
    finally:
        watch.finish()


async def _once(
    gw: Engine, ingress: Ingress, call: Call, send: Send, watch: DisconnectWatch, trace: CallTrace
) -> None:
    walker = gw.walker(call)
    cfg = gw.runtime.config
    relay = once_relay(
        call, gw.client, gw.inner_order, cfg.server.forward_headers, cfg.pool.lossy_translation
    )
    trace.walker, trace.relay = walker, relay
    try:
        await walker.run(trace.timed(relay.attempt, gw.observer.in_flight))
    except WalkFailed as err:
        watch.finish()
        status, body = _failed_reply(gw, ingress, call, relay.native_error, err)
        trace.status, trace.outcome = status, "failed"
        await send_bytes(send, status, body, [trace.header])
        return
    watch.finish()
    body = relay.final_body(walker.state)
    gw.finish(call, walker, relay.routing)
    gw.record_response(call, relay)
    headers = walker.state.headers()
    headers.append(trace.header)
    await send_bytes(send, 200, body, headers)


class _Closing:
    """The writes of a stream's last read, held once its reply is whole: they go out with the end of the
    body in one write (one socket write a call less: the separate empty end was a third of uvicorn's)."""

    __slots__ = ("held", "parts")

    def __init__(self) -> None:
        self.held = False
        self.parts: list[bytes] = []

    @property
    def body(self) -> bytes:
        return b"".join(self.parts)


async def _stream(
    gw: Engine, ingress: Ingress, call: Call, send: Send, watch: DisconnectWatch, trace: CallTrace
) -> None:
    walker = gw.walker(call)
    # The closures hold the request id, not the trace: the relay keeps them and the trace keeps the relay,
    # and a reference cycle would leave the whole call to the garbage collector's full passes (issue #29).
    request_id = trace.header
    closing = _Closing()

    async def start(status: int, headers: list[tuple[bytes, bytes]]) -> None:
        headers.append(request_id)
        await send({"type": "http.response.start", "status": status, "headers": headers})

    async def emit(data: bytes) -> None:
        if closing.held:
            closing.parts.append(data)
        else:
            await send({"type": "http.response.body", "body": data, "more_body": True})

    def complete() -> None:  # the reply is whole: a client that leaves now left a complete call
        watch.finish()
        closing.held = True

    cfg = gw.runtime.config
    forward, lossy = cfg.server.forward_headers, cfg.pool.lossy_translation
    relay = stream_relay(call, gw.client, walker.state, start, emit, gw.inner_order, forward, lossy)
    relay.cs.on_complete = complete
    trace.walker, trace.relay = walker, relay
    try:
        await walker.run(trace.timed(relay.attempt, gw.observer.in_flight))
    except WalkFailed as err:
        watch.finish()
        trace.status, trace.outcome = (200 if relay.started else err.status), "failed"
        if relay.started:
            # Headers (and maybe reasoning) already went out: end with an error event, no terminator.
            closing.parts.append(_stream_error(ingress, relay, err))
            await send({"type": "http.response.body", "body": closing.body, "more_body": False})
        else:
            status, body = _failed_reply(gw, ingress, call, relay.native_error, err)
            trace.status = status
            await send_bytes(send, status, body, [trace.header])
        return
    except CommittedFailure:
        # Cut after content: the client got an error event; the call line says so (outcome "cut").
        trace.outcome = "cut"
    else:
        gw.finish(call, walker, relay.routing)
        gw.record_response(call, relay)
    watch.finish()
    await send({"type": "http.response.body", "body": closing.body, "more_body": False})


def _stream_error(ingress: Ingress, relay: CallStreamRelay, err: WalkFailed) -> bytes:
    event = relay.error_event(err.message, err.type, err.status)
    return event if event is not None else ingress.stream_error(err.message, err.type)


def _failed_reply(
    gw: Engine, ingress: Ingress, call: Call, native_error: tuple[int, bytes] | None, err: WalkFailed
) -> tuple[int, bytes]:
    """A walk that ended on the request's own fault, last refused by a route speaking the client's
    dialect, answers with that route's 4xx body unchanged (SPEC §1.6); otherwise modelpool's error.
    An upstream's context overflow, native or translated, is said in the client's dialect's own words
    (SPEC §1.7), whatever words the upstream used."""
    kinds = {a.kind for a in err.attempts}
    if kinds == {"request"}:
        mapped = _overflow_reply(gw, ingress, call, native_error, err)
        if mapped is not None:
            return 400, mapped
    if native_error is not None and kinds == {"request"} and err.attempts[-1].status == native_error[0]:
        return native_error
    return err.status, ingress.walk_failed(err)


def _overflow_reply(
    gw: Engine, ingress: Ingress, call: Call, native_error: tuple[int, bytes] | None, err: WalkFailed
) -> bytes | None:
    last = err.attempts[-1]
    text = native_error[1].decode("utf-8", "replace") if native_error is not None else last.message
    found = parse_overflow(text) or parse_overflow(last.message)
    if found is None:
        return None
    if native_error is not None and already_said(ingress.name, native_error[1]):
        return native_error[1]  # the upstream said it in the client's own words: its body unchanged
    route = gw.runtime.catalog.routes.get(last.route)
    window = route.capabilities.context_window if route is not None else None
    tokens, maximum = fill(found, call.est_tokens, window or pool_windows(gw.runtime, call.pool).largest)
    return overflow_body(ingress.name, tokens, maximum)


async def count_tokens(gw: Engine, scope: Scope, receive: Receive, send: Send) -> None:
    """`POST /v1/messages/count_tokens`: a route's own count when the pool has a route that speaks
    Messages (SPEC §1.6), an estimate (chars/4 plus overheads) otherwise."""
    headers = header_map(scope)
    try:
        if not client_key_ok(gw, headers):
            raise ClientError(401, "invalid or missing API key", type="authentication_error")
        body = await read_body(receive, headers, gw.runtime.config.server.max_body)
        try:
            req = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise ClientError(400, f"request body is not valid JSON: {exc}") from None
        if not isinstance(req, dict) or not isinstance(req.get("messages"), list):
            raise ClientError(400, "messages: Field required", param="messages")
        call = _count_call(gw, req, headers)
    except ClientError as err:
        await send_bytes(send, err.status, an.client_error_body(err))
        return
    candidates = gw.planner.plan(gw.runtime, call, gw.clock()).candidates if call is not None else []
    patterns = gw.runtime.config.server.forward_headers.get("anthropic") or []
    status, answer, extra = await relay_count_tokens(gw.client, candidates, req, headers, patterns)
    await send_bytes(send, status, answer, extra)


def _count_call(gw: Engine, req: dict[str, Any], headers: dict[str, str]) -> Call | None:
    """The pool's call for a count, or None for a model no pool serves: a count is advice, so an
    unknown name (a client's own model id with no alias) gets the estimate rather than a 404."""
    if not isinstance(req.get("model"), str):
        return None
    try:
        return gw.prepare("anthropic", req, headers)
    except ClientError as err:
        if err.status == 404:
            return None
        raise
