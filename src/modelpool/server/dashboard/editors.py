"""Admin API behind the Settings page's list editors (SPEC §1.2 "provider order editing, groups").

`GET /admin/providers` lists every registered provider by display name with the three rankings
(`pool.provider_order`, `peak.peak_provider_order`, `peak.off_peak_provider_order`) as the arrow editor
shows them; `POST /admin/providers/order {key, order}` saves one. `GET/PUT /admin/groups` reads and
replaces `pool.groups`. Everything lands in the dashboard layer through `gw.set_dashboard`.

Saving what the editor showed untouched stores an empty ranking (= inherit), never a redundant full
list (pool seed); a list equal to the file's value hands the key back to the file.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from modelpool.catalog.filters import twin_source
from modelpool.server.admin_guard import guard, json_response

if TYPE_CHECKING:
    from modelpool.config.schema import Config
    from modelpool.engine import Engine

ORDER_KEYS = ("pool.provider_order", "peak.peak_provider_order", "peak.off_peak_provider_order")


def _order_value(config: Config, key: str) -> list[str]:
    section, name = key.split(".", 1)
    return list(getattr(getattr(config, section), name))


def _layer_map(gw: Engine, keys: tuple[str, ...]) -> dict[str, str]:
    from modelpool.config.layers import effective_settings

    return {
        s.key: s.layer for s in effective_settings(gw.loaded.file_layer, gw.dashboard_layer) if s.key in keys
    }


def _display(listed: list[str], registered: list[str]) -> list[str]:
    """What the editor shows: the listed ids first (even ones that disappeared), then the rest in
    registration order — exactly the order the planner falls back to for a partial list."""
    seen = set(listed)
    return list(listed) + [pid for pid in registered if pid not in seen]


def _shortest(order: list[str], registered: list[str], keep: int) -> list[str]:
    """The shortest prefix of `order` (at least `keep` long) that ranks the same: a tail already in
    registration order is what an unlisted provider gets anyway, so the stored list stays partial."""
    full = _display(order, registered)
    for n in range(min(keep, len(order)), len(order) + 1):
        if _display(order[:n], registered) == full:
            return order[:n]
    return order


def _inherited(config: Config, key: str, registered: list[str]) -> list[str]:
    """The order an empty list stands for: registration order, or provider_order for a period list."""
    if key == "pool.provider_order":
        return list(registered)
    return _display(_order_value(config, "pool.provider_order"), registered)


def providers_report(gw: Engine) -> dict[str, Any]:
    rt = gw.runtime
    config = rt.config
    registered = list(rt.catalog.providers)
    counts: dict[str, list[int]] = {pid: [0, 0] for pid in registered}
    for route in rt.catalog.routes.values():
        entry = counts.setdefault(route.provider_id, [0, 0])
        entry[0] += 1
        entry[1] += int(rt.catalog.route_status(route)[0])
    providers = []
    for pid in registered:
        endpoint = rt.endpoints.get(pid)
        providers.append(
            {
                "id": pid,
                "name": endpoint.name if endpoint is not None and endpoint.name else pid,
                "kind": endpoint.kind if endpoint is not None else None,
                "models": counts[pid][0],
                "candidates": counts[pid][1],
                "twin": twin_source(pid, config.pool.twin_suffixes) is not None,
            }
        )
    layers = _layer_map(gw, ORDER_KEYS)
    orders = {}
    for key in ORDER_KEYS:
        value = _order_value(config, key)
        orders[key] = {
            "value": value,
            "layer": layers.get(key, "default"),
            "display": _display(value, registered) if value else _inherited(config, key, registered),
            "inherits": not value,
            # A provider that disappeared is kept and flagged, never dropped silently (pool seed).
            "missing": [pid for pid in value if pid not in counts],
        }
    from modelpool.periods import period_report

    period = period_report(rt.policy(), datetime.fromtimestamp(gw.clock(), UTC))
    return {"providers": providers, "orders": orders, "period": period}


def order_patch(gw: Engine, key: str, order: Any) -> dict[str, Any]:
    """The dashboard patch for one ranking saved from the editor (None order = back to the file)."""
    if key not in ORDER_KEYS:
        raise ValueError(f"'key' must be one of {', '.join(ORDER_KEYS)}")
    if order is None:
        return {key: None}
    if not isinstance(order, list) or not all(isinstance(p, str) and p.strip() for p in order):
        raise ValueError("'order' must be a list of provider ids")
    config = gw.runtime.config
    registered = list(gw.runtime.catalog.providers)
    known = set(registered) | set(_order_value(config, key))
    unknown = [p for p in order if p not in known]
    if unknown:
        raise ValueError(f"unknown provider(s): {', '.join(unknown)}")
    # An empty period list means "inherit provider_order", not "registration order": never trim to it.
    keep = 0 if key == "pool.provider_order" else 1
    cleaned = _shortest(list(dict.fromkeys(order)), registered, keep)  # duplicates only repeat a rank
    if _display(cleaned, registered) == _inherited(config, key, registered):
        cleaned = []
    if cleaned == _order_value(gw.loaded.config, key):
        return {key: None}
    return {key: cleaned}


def groups_report(gw: Engine) -> dict[str, Any]:
    rt = gw.runtime
    layer = _layer_map(gw, ("pool.groups",)).get("pool.groups", "default")
    groups = [g.model_dump(mode="json") for g in rt.config.pool.groups]
    pools = [
        {"id": p.id, "name": p.name, "group": p.group, "routes": [r.key for r in p.routes]}
        for p in rt.catalog.pools.values()
    ]
    return {"groups": groups, "layer": layer, "pools": pools}


def groups_patch(gw: Engine, groups: Any) -> dict[str, Any]:
    if groups is None:
        return {"pool.groups": None}
    if not isinstance(groups, list):
        raise ValueError("'groups' must be a list of {id, name, models, merge}")
    from modelpool.config.layers import validate_dashboard_patch

    flat = validate_dashboard_patch({"pool.groups": groups})  # ConfigError → 400 with key paths
    file_groups = [g.model_dump(mode="json") for g in gw.loaded.config.pool.groups]
    normalized = [g.model_dump(mode="json") for g in _parse_groups(flat["pool.groups"])]
    return {"pool.groups": None if normalized == file_groups else flat["pool.groups"]}


def _parse_groups(raw: list[Any]) -> list[Any]:
    from modelpool.config.schema import GroupConfig

    return [GroupConfig.model_validate(g) for g in raw]


async def _json_object(request: Request) -> dict[str, Any]:
    body = orjson.loads(await request.body() or b"{}")
    if not isinstance(body, dict):
        raise ValueError("expected a JSON object")
    return body


async def providers_get(gw: Engine, request: Request) -> Response:
    return json_response(providers_report(gw))


async def providers_order(gw: Engine, request: Request) -> Response:
    from modelpool.config.layers import validate_dashboard_patch

    body = await _json_object(request)
    patch = order_patch(gw, str(body.get("key")), body.get("order"))
    await gw.set_dashboard(validate_dashboard_patch(patch))
    return json_response(providers_report(gw))


async def groups_get(gw: Engine, request: Request) -> Response:
    return json_response(groups_report(gw))


async def groups_put(gw: Engine, request: Request) -> Response:
    body = await _json_object(request)
    await gw.set_dashboard(groups_patch(gw, body.get("groups")))
    return json_response(groups_report(gw))


def editor_routes() -> list[Route]:
    return [
        Route("/admin/providers", guard(providers_get), methods=["GET"]),
        Route("/admin/providers/order", guard(providers_order), methods=["POST"]),
        Route("/admin/groups", guard(groups_get), methods=["GET"]),
        Route("/admin/groups", guard(groups_put), methods=["PUT"]),
    ]
