"""`GET /metrics` (SPEC §1.2): Prometheus text format.

It names routes and shows traffic, so by default a scraper presents a bearer token like the admin API
does: the admin token or `metrics.token` (a scrape-only secret that opens nothing else).
`metrics.require_token: false` opens it (e.g. on a loopback-only gateway with a local Prometheus);
`metrics.enabled: false` answers 404.
"""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING

from prometheus_client import CONTENT_TYPE_LATEST
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from modelpool.server.admin_guard import json_response

if TYPE_CHECKING:
    from modelpool.engine import Engine


def _token_ok(gw: Engine, request: Request) -> bool:
    presented = request.headers.get("authorization", "").removeprefix("Bearer ").strip().encode()
    if not presented:
        return False
    accepted = [t for t in (gw.runtime.config.metrics.token, gw.admin_token) if t]
    return any(hmac.compare_digest(presented, t.encode()) for t in accepted)


async def metrics(request: Request) -> Response:
    gw: Engine = request.app.state.gateway
    cfg = gw.runtime.config.metrics
    if not cfg.enabled:
        return json_response({"error": {"message": "metrics are disabled", "type": "not_found_error"}}, 404)
    if cfg.require_token and not _token_ok(gw, request):
        return Response(
            b'{"error":{"message":"metrics need a bearer token (metrics.token or the admin token)",'
            b'"type":"authentication_error"}}',
            401,
            headers={"www-authenticate": "Bearer"},
            media_type="application/json",
        )
    return Response(gw.observer.render(), 200, media_type=CONTENT_TYPE_LATEST)


def metrics_routes() -> list[Route]:
    return [Route("/metrics", metrics, methods=["GET"])]
