"""The Gemini API face (SPEC §1.1): `/v1beta/models/{model}:generateContent`, `:streamGenerateContent`,
`:countTokens` and `GET /v1beta/models[/{model}]`, on the same port as the other dialects.

The model and the method are in the path (a prefix before `/v1beta` is allowed, as the SDKs allow a base
URL with a path); the client key in `x-goog-api-key`, `?key=` or a bearer token. Every refusal is in
Gemini's `{error: {code, message, status}}` shape with a 4xx: Gemini CLI retries 5xx for minutes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import parse_qs, unquote

import orjson

from modelpool.catalog import UnknownModel
from modelpool.protocols.errors import ClientError
from modelpool.protocols.gemini import wire
from modelpool.protocols.tokens import estimate_tokens
from modelpool.relays.count_tokens import count_gemini
from modelpool.server.asgi import Receive, Scope, Send, header_map, read_body, send_bytes
from modelpool.server.client_api import Ingress, client_key_ok, handle_call

if TYPE_CHECKING:
    from modelpool.engine import Engine

MARK = "/v1beta/models"
_METHODS = ("generateContent", "streamGenerateContent", "countTokens")


def is_gemini_path(path: str) -> bool:
    return MARK in path


def _ingress(model: str, stream: bool) -> Ingress:
    return Ingress(
        "gemini",
        lambda body: wire.parse_request(body, model, stream),
        wire.client_error_body,
        wire.walk_failed_body,
        lambda message, type: wire.stream_error_event(message, type),
    )


def gemini_headers(scope: Scope) -> dict[str, str]:
    """The request headers with the Gemini key where the key ring looks (`x-api-key`)."""
    headers = header_map(scope)
    key = headers.get("x-goog-api-key")
    if not key:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        key = (query.get("key") or [""])[0]
    if key and "x-api-key" not in headers:
        headers["x-api-key"] = key
    return headers


async def serve_gemini(gw: Engine, scope: Scope, receive: Receive, send: Send) -> None:
    path = unquote(scope["path"])
    rest = path[path.index(MARK) + len(MARK) :].strip("/")
    name, _, method = rest.partition(":")
    name = name.removeprefix("models/")
    headers = gemini_headers(scope)
    if not client_key_ok(gw, headers):
        await send_bytes(send, 401, wire.error_body(401, "API key not valid. Please pass a valid API key."))
        return
    if scope["method"] == "GET" and not method:
        await _models(gw, name, send)
        return
    if scope["method"] != "POST" or method not in _METHODS or not name:
        await send_bytes(send, 404, wire.error_body(404, f"{scope['method']} {path}: not found"))
        return
    if method == "countTokens":
        await _count_tokens(gw, name, headers, receive, send)
        return
    scope = {**scope, "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]}
    await handle_call(gw, _ingress(name, method == "streamGenerateContent"), scope, receive, send)


async def _models(gw: Engine, name: str, send: Send) -> None:
    catalog = gw.runtime.catalog
    if not name:
        models = [_entry(pool) for pool in catalog.pools.values()]
        await send_bytes(send, 200, orjson.dumps({"models": models}))
        return
    try:
        pool = catalog.resolve(name)
    except UnknownModel:
        await send_bytes(
            send, 404, wire.error_body(404, f"models/{name} is not found for API version v1beta")
        )
        return
    await send_bytes(send, 200, orjson.dumps(_entry(pool)))


def _entry(pool: object) -> dict[str, object]:
    caps = pool.capabilities  # type: ignore[attr-defined]
    return wire.model_entry(pool.id, pool.name, caps.context_window, caps.efforts)  # type: ignore[attr-defined]


async def _count_tokens(gw: Engine, name: str, headers: dict[str, str], receive: Receive, send: Send) -> None:
    """A Gemini route's own count when the pool has one (native first), else an estimate (chars/4 plus
    overheads, `protocols.tokens`); a model no pool serves gets the estimate too (a count is advice)."""
    try:
        body = await read_body(receive, headers, gw.runtime.config.server.max_body)
        req = wire.count_request(body)
    except ClientError as err:  # the checks, or a body over max_body
        await send_bytes(send, err.status, wire.client_error_body(err))
        return
    try:
        call = gw.prepare("gemini", {**req, "model": name, "stream": False}, headers)
    except ClientError:
        call = None
    candidates = gw.planner.plan(gw.runtime, call, gw.clock()).candidates if call is not None else []
    patterns = gw.runtime.config.server.forward_headers.get("gemini") or []
    estimate = estimate_tokens(req, "gemini")
    status, answer, extra = await count_gemini(gw.client, candidates, body, estimate, headers, patterns)
    await send_bytes(send, status, answer, extra)
