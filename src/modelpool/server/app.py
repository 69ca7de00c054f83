"""The ASGI application: a tiny dispatcher that sends the client API's hot path straight to raw ASGI
handlers and everything else to a Starlette app (admin API, models list, probes, dashboard)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from modelpool.protocols import openai_chat as oc
from modelpool.server.admin_api import admin_routes
from modelpool.server.admin_guard import json_response
from modelpool.server.asgi import Receive, Scope, Send, header_map, send_bytes
from modelpool.server.client_api import INGRESSES, client_key_ok, count_tokens, handle_call
from modelpool.server.dashboard import dashboard_routes
from modelpool.server.gemini_api import is_gemini_path, serve_gemini
from modelpool.server.mcp_http import McpEndpoint
from modelpool.server.metrics_api import metrics_routes
from modelpool.server.models_list import models_body

if TYPE_CHECKING:
    from modelpool.engine import Engine

log = logging.getLogger("modelpool.server")


def build_app(gw: Engine) -> Any:
    starlette = _starlette_app(gw)
    mcp = McpEndpoint(gw, starlette)  # MCP over streamable HTTP at /mcp (admin token), tools → admin API

    routes = {
        "/v1/chat/completions": INGRESSES["openai"],
        "/chat/completions": INGRESSES["openai"],
        "/v1/messages": INGRESSES["anthropic"],
        "/v1/responses": INGRESSES["responses"],
        "/responses": INGRESSES["responses"],
    }

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path = scope["path"]
            ingress = routes.get(path)
            if ingress is not None or path == "/v1/messages/count_tokens":
                if scope["method"] != "POST":
                    await send_bytes(send, 405, oc.error_body("use POST", "invalid_request_error"))
                elif ingress is None:
                    await count_tokens(gw, scope, receive, send)
                else:
                    await handle_call(gw, ingress, scope, receive, send)
                return
            if is_gemini_path(path):
                await serve_gemini(gw, scope, receive, send)
                return
            if path == "/mcp" or path.startswith("/mcp/"):
                await mcp(scope, receive, send)
                return
            await starlette(scope, receive, send)
        elif scope["type"] == "lifespan":
            await _lifespan(gw, receive, send, mcp)
        else:
            await starlette(scope, receive, send)

    return app


async def _lifespan(gw: Engine, receive: Receive, send: Send, mcp: McpEndpoint) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            try:
                await gw.start()
            except Exception as exc:  # report, don't hang the server
                log.exception("gateway failed to start")
                await send({"type": "lifespan.startup.failed", "message": str(exc)})
                return
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await mcp.close()
            await gw.close()
            gw.observer.close()
            await send({"type": "lifespan.shutdown.complete"})
            return


def _starlette_app(gw: Engine) -> Starlette:
    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    async def readyz(request: Request) -> Response:
        ready = gw.started
        body = {
            "ready": ready,
            "config": "error" if gw.config_error else "ok",
            "state": gw.state.describe(),
            # Still ready (200) when the state store is down: routing goes on from local memory (SPEC §9).
            "degraded": not gw.state.healthy,
            "pools": len(gw.runtime.catalog.pools),
        }
        return json_response(body, 200 if ready else 503)

    async def models(request: Request) -> Response:
        if not client_key_ok(gw, header_map(request.scope)):
            return Response(
                oc.error_body("invalid or missing API key", "authentication_error"),
                401,
                media_type="application/json",
            )
        headers = request.headers
        shape = (
            "codex"
            if "client_version" in request.query_params
            else "anthropic"
            if "anthropic-version" in headers
            else "openai"
        )
        return Response(models_body(gw, shape), media_type="application/json")  # cached per snapshot

    routes = [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/models", models, methods=["GET"]),
        *admin_routes(),
        *metrics_routes(),
        *dashboard_routes(),
    ]

    async def not_found(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 404)
        message = f"{request.method} {request.url.path}: " + (
            "not found" if status == 404 else "method not allowed"
        )
        if request.url.path.startswith("/admin/"):
            return json_response({"error": {"message": message, "type": "not_found_error"}}, status)
        return Response(
            oc.error_body(message, "invalid_request_error"), status, media_type="application/json"
        )

    app = Starlette(routes=routes, exception_handlers={404: not_found, 405: not_found})
    app.state.gateway = gw
    return app
