"""The client API (SPEC §1.1): `/v1/chat/completions` on the hot path, `/v1/models`."""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
from typing import TYPE_CHECKING, Any

from modelpool.protocols import openai_chat as oc
from modelpool.protocols.errors import ClientError, WalkFailed
from modelpool.routing.call import Call
from modelpool.server.asgi import DisconnectWatch, Receive, Scope, Send, header_map, read_body, send_bytes
from modelpool.walk.openai_relay import JSON_HEADERS, OpenAIOnceRelay, OpenAIStreamRelay
from modelpool.walk.walker import CommittedFailure

if TYPE_CHECKING:
    from modelpool.gateway import Gateway

log = logging.getLogger("modelpool.calls")


def client_key_ok(gw: Gateway, headers: dict[str, str]) -> bool:
    keys = gw.runtime.config.server.api_keys
    if not keys:
        return True
    presented = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ").strip()
    return any(hmac.compare_digest(presented.encode(), k.encode()) for k in keys)


async def chat_completions(gw: Gateway, scope: Scope, receive: Receive, send: Send) -> None:
    headers = header_map(scope)
    try:
        if not client_key_ok(gw, headers):
            raise ClientError(401, "invalid or missing API key", type="authentication_error")
        body = await read_body(receive, headers, gw.runtime.config.server.max_body)
        call = gw.prepare("openai", oc.parse_request(body), headers)
    except ClientError as err:
        await send_bytes(send, err.status, oc.client_error_body(err))
        return
    watch = DisconnectWatch(receive)
    try:
        if call.stream:
            await _stream(gw, call, send, watch)
        else:
            await _once(gw, call, send, watch)
    except asyncio.CancelledError:
        if not watch.disconnected:
            raise
        # The client left: the walk is over and the upstream connection was closed by the relay.
        current = asyncio.current_task()
        if current is not None:
            current.uncancel()
        log.info("call to %s cancelled by the client", call.pool.id)
    finally:
        watch.finish()


async def _once(gw: Gateway, call: Call, send: Send, watch: DisconnectWatch) -> None:
    walker = gw.walker(call)
    relay = OpenAIOnceRelay(call, gw.client, gw.inner_order)
    try:
        await walker.run(relay.attempt)
    except WalkFailed as err:
        watch.finish()
        await send_bytes(send, err.status, oc.walk_failed_body(err))
        return
    watch.finish()
    gw.finish(call, walker, relay.routing)
    await send_bytes(send, 200, relay.final_body(walker.state), walker.state.headers())


async def _stream(gw: Gateway, call: Call, send: Send, watch: DisconnectWatch) -> None:
    walker = gw.walker(call)

    async def start(status: int, headers: list[tuple[bytes, bytes]]) -> None:
        await send({"type": "http.response.start", "status": status, "headers": headers})

    async def emit(data: bytes) -> None:
        await send({"type": "http.response.body", "body": data, "more_body": True})

    relay = OpenAIStreamRelay(call, gw.client, walker.state, start, emit, gw.inner_order)
    t0 = time.monotonic()
    try:
        await walker.run(relay.attempt)
    except WalkFailed as err:
        watch.finish()
        if relay.started:
            # Headers (and maybe reasoning) already went out: end with an error event, no [DONE].
            await emit(oc.stream_error_event(err.message, err.type, "all_routes_failed"))
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        else:
            await send_bytes(send, err.status, oc.walk_failed_body(err))
        return
    except CommittedFailure as exc:
        log.warning(
            "stream of %s cut after content on %s: %s", call.pool.id, walker.state.metadata()["route"], exc
        )
    else:
        gw.finish(call, walker, relay.routing)
    watch.finish()
    await send({"type": "http.response.body", "body": b"", "more_body": False})
    log.debug(
        "served %s via %s in %.1f ms",
        call.pool.id,
        walker.state.metadata()["route"],
        (time.monotonic() - t0) * 1000,
    )


def models_payload(gw: Gateway) -> dict[str, Any]:
    """OpenAI list shape with modelpool's extra fields per pool (SPEC §1.1)."""
    rt = gw.runtime
    data: list[dict[str, Any]] = []
    created = int(gw.started_at) if hasattr(gw, "started_at") else 0
    for pool in rt.catalog.pools.values():
        caps = pool.capabilities
        data.append(
            {
                "id": pool.id,
                "object": "model",
                "created": created,
                "owned_by": "modelpool",
                "name": pool.name,
                "routes": [r.key for r in pool.routes],
                "context_window": caps.context_window,
                "efforts": list(caps.efforts) if caps.efforts is not None else None,
                "input_modalities": list(caps.input_modalities)
                if caps.input_modalities is not None
                else ["text"],
                "tools": caps.tools,
            }
        )
    return {"object": "list", "data": data}


__all__ = ["JSON_HEADERS", "chat_completions", "client_key_ok", "models_payload"]
