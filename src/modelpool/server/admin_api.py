"""The admin JSON API (SPEC §1.2) used by the CLI and the dashboard. Every route needs the admin token."""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from modelpool.server.admin_guard import guard, json_response
from modelpool.server.admin_live import live_routes
from modelpool.server.admin_ranking import ranking_routes
from modelpool.server.admin_roster import roster_routes
from modelpool.server.admin_usage import usage_routes
from modelpool.server.dashboard.editors import editor_routes
from modelpool.server.status import pools_report, status_report

if TYPE_CHECKING:
    from modelpool.engine import Engine


async def status(gw: Engine, request: Request) -> Response:
    return json_response(status_report(gw))


async def pools(gw: Engine, request: Request) -> Response:
    return json_response(pools_report(gw))


async def health_reset(gw: Engine, request: Request) -> Response:
    body = orjson.loads(await request.body() or b"{}")
    route = body.get("route") if isinstance(body, dict) else None
    gw.health.reset(route)
    gw.quota.clear(route)  # a route's announced quota is part of its health (SPEC §3.8, §5)
    return json_response({"ok": True, "reset": route or "all"})


async def settings_get(gw: Engine, request: Request) -> Response:
    from modelpool.config import effective_settings

    rows = effective_settings(gw.loaded.file_layer, gw.dashboard_layer)
    return json_response({"settings": [{"key": r.key, "value": r.value, "layer": r.layer} for r in rows]})


async def settings_patch(gw: Engine, request: Request) -> Response:
    from modelpool.config.layers import validate_dashboard_patch

    patch = orjson.loads(await request.body() or b"{}")
    if not isinstance(patch, dict):
        raise ValueError("expected a JSON object of dotted keys")
    await gw.set_dashboard(validate_dashboard_patch(patch))
    return json_response({"ok": True, "dashboard": gw.dashboard_layer})


async def discover(gw: Engine, request: Request) -> Response:
    await gw.rediscover()
    return json_response({"ok": True, "errors": gw.discovery.errors})


async def calendar(gw: Engine, request: Request) -> Response:
    from modelpool.periods import calendar_report

    return json_response(calendar_report(gw.calendar))


async def calendar_sync(gw: Engine, request: Request) -> Response:
    from modelpool.periods import calendar_report

    await gw.calendar.sync(force=True)
    gw.runtime.memo.clear()  # base orders memoised under the old calendar's period
    return json_response(calendar_report(gw.calendar))


async def period(gw: Engine, request: Request) -> Response:
    from datetime import UTC, datetime

    from modelpool.periods import period_report

    at = request.query_params.get("at")
    when = datetime.fromisoformat(at) if at else datetime.fromtimestamp(gw.clock(), UTC)
    return json_response(period_report(gw.runtime.policy(), when))


async def openapi(gw: Engine, request: Request) -> Response:
    from modelpool.server.admin_openapi import openapi_document

    return json_response(openapi_document())


def admin_routes() -> list[Route]:
    return [
        *live_routes(),
        *ranking_routes(),
        *roster_routes(),
        *editor_routes(),
        *usage_routes(),
        Route("/admin/status", guard(status), methods=["GET"]),
        Route("/admin/pools", guard(pools), methods=["GET"]),
        Route("/admin/health/reset", guard(health_reset), methods=["POST"]),
        Route("/admin/settings", guard(settings_get), methods=["GET"]),
        Route("/admin/settings", guard(settings_patch), methods=["PATCH"]),
        Route("/admin/discover", guard(discover), methods=["POST"]),
        Route("/admin/calendar", guard(calendar), methods=["GET"]),
        Route("/admin/calendar/sync", guard(calendar_sync), methods=["POST"]),
        Route("/admin/period", guard(period), methods=["GET"]),
        Route("/admin/openapi.json", guard(openapi), methods=["GET"]),
    ]
