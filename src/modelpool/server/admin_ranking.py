"""Admin API for aggregator ranking (SPEC §6): `GET /admin/ranking/{model}`, `POST /admin/ranking/refresh`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from modelpool.catalog import UnknownModel
from modelpool.server.admin_guard import guard, json_response

if TYPE_CHECKING:
    from modelpool.catalog.model import Route as CatalogRoute
    from modelpool.engine import Engine


def aggregator_route(gw: Engine, name: str) -> CatalogRoute:
    """An aggregator route for MODEL: a route key, an aggregator model id, or a pool with such a route."""
    rt = gw.runtime

    def is_aggregator(route: CatalogRoute) -> bool:
        ep = rt.endpoints.get(route.provider_id)
        return ep is not None and ep.aggregator

    route = rt.catalog.routes.get(name)
    if route is not None and is_aggregator(route):
        return route
    for route in rt.catalog.routes.values():
        if route.model_id == name and is_aggregator(route):
            return route
    try:
        pool = rt.catalog.resolve(name)
    except UnknownModel:
        raise LookupError(f"no aggregator route serves {name!r}") from None
    for route in pool.routes:
        if is_aggregator(route):
            return route
    raise LookupError(f"pool {pool.id!r} has no aggregator (vercel/openrouter) route")


async def ranking(gw: Engine, request: Request) -> Response:
    name = request.path_params["model"]
    try:
        route = aggregator_route(gw, name)
    except LookupError as exc:
        return json_response({"error": {"message": str(exc), "type": "not_found_error"}}, 404)
    ep = gw.runtime.endpoints[route.provider_id]
    if request.query_params.get("refresh") in ("1", "true", "yes"):
        gw.aggregators.refresh(route.model_id)
    session = request.query_params.get("session") or None
    report: dict[str, Any] = await gw.aggregators.ranking_report(
        ep.kind, ep.root, ep.api_key, route.model_id, session
    )
    report["route"] = route.key
    report["provider"] = ep.id
    return json_response(report)


async def refresh(gw: Engine, request: Request) -> Response:
    body = orjson.loads(await request.body() or b"{}")
    model = body.get("model") if isinstance(body, dict) else None
    if model is not None and not isinstance(model, str):
        # Fuzzing found {"model": false} reaching the catalog lookup (AttributeError → 500).
        raise ValueError("'model' must be a string")
    if model is not None:
        try:
            model = aggregator_route(gw, model).model_id
        except LookupError as exc:
            return json_response({"error": {"message": str(exc), "type": "not_found_error"}}, 404)
    gw.aggregators.refresh(model)
    return json_response({"ok": True, "dropped": model or "all"})


def ranking_routes() -> list[Route]:
    return [
        Route("/admin/ranking/refresh", guard(refresh), methods=["POST"]),
        Route("/admin/ranking/{model:path}", guard(ranking), methods=["GET"]),
    ]
