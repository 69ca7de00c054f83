"""The roster: `GET /admin/models` and `POST /admin/models {key, enabled, scope}` (SPEC §1.2, §11).

Shape follows the rotator seed's model list: `groups` are the two sections (chat channels, vision
twins), `channels` one entry per provider, `models` every route row. A section and a channel carry the
same `models/ok/resting/off` counters, derived here from the rows so a folded line can never disagree
with what it hides.

A switch writes the dashboard layer (`pool.disabled`, `pool.enabled`, `pool.disabled_providers`) through
`gw.set_dashboard`; the four precedence rules themselves live in `modelpool.catalog.status`, and this
module only decides which list entries express the operator's click:

1. a channel's button is labelled from its own flag (`closed`), never from its rows' states;
2. a closed channel still lets a row be switched back on (a `pool.enabled` entry);
3. closing a channel drops the `pool.enabled` entries inside it — they are the per-row overrides that
   would keep rows running behind a closed channel, i.e. make the button lie; a row switched on
   afterwards wins again (rule 1 of the status module);
4. a vision (twin) channel has no channel switch: its rows are kept out by the twin rule, which the
   channel flag cannot lift, so a button there would promise a change that never happens (400).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from modelpool.catalog import status as st
from modelpool.catalog.filters import glob_match, matches_selector, twin_source
from modelpool.health.record import RouteState
from modelpool.server.admin_guard import guard, json_response

if TYPE_CHECKING:
    from modelpool.catalog.catalog import Catalog
    from modelpool.catalog.model import Route as CatalogRoute
    from modelpool.config.schema import PoolConfig
    from modelpool.engine import Engine

CHAT = "chat"
VISION = "vision"
# Catalog reasons → the roster's words (rotator seed). Only `manual` and `vision` are switchable here;
# the others are structural or owned by the config file.
REASONS = {
    st.SWITCHED_OFF: "manual",
    st.TWIN: "vision",
    st.EXCLUDED: "excluded",
    st.PROVIDER: "provider",
    st.NON_CHAT: "non-chat",
}
STRUCTURAL = frozenset({st.EXCLUDED, st.PROVIDER, st.NON_CHAT})
SWITCH_KEYS = ("pool.disabled", "pool.enabled", "pool.disabled_providers")


# --- reading -------------------------------------------------------------------------------------


def roster(gw: Engine) -> dict[str, Any]:
    rt = gw.runtime
    catalog = rt.catalog
    pool_cfg = rt.config.pool
    now = gw.clock()
    rows_by_channel: dict[str, list[dict[str, Any]]] = {pid: [] for pid in catalog.providers}
    for route in catalog.routes.values():
        rows_by_channel.setdefault(route.provider_id, []).append(_row(gw, catalog, route, now))
    channels: list[dict[str, Any]] = []
    for pid, rows in rows_by_channel.items():
        source = twin_source(pid, pool_cfg.twin_suffixes)
        endpoint = rt.endpoints.get(pid)
        name = endpoint.name if endpoint is not None and endpoint.name else pid
        kind = VISION if source is not None else CHAT
        channels.append(
            {
                "id": pid,
                "name": name,
                # The id stays visible when a display name differs: config lists are written in ids.
                "label": name if name == pid else f"{name} ({pid})",
                "kind": kind,
                "provider_kind": endpoint.kind if endpoint is not None else None,
                "sourceChannel": source,
                "closed": kind == CHAT and _any_glob(pool_cfg.disabled_providers, pid),
                "switchable": kind == CHAT,
                **tally(rows),
            }
        )
    rows = [row for pid in rows_by_channel for row in rows_by_channel[pid]]
    groups = []
    for section in (CHAT, VISION):
        members = [str(c["id"]) for c in channels if c["kind"] == section]
        section_rows = [r for pid in members for r in rows_by_channel[pid]]
        groups.append({"id": section, "kind": section, "channels": members, **tally(section_rows)})
    layers = _layers(gw)
    lists = {k: {"value": _current(pool_cfg, k), "layer": layers.get(k, "default")} for k in SWITCH_KEYS}
    # `models` is the row list here (seed shape); the roster-wide counters go under `totals`.
    return {"groups": groups, "channels": channels, "models": rows, "totals": tally(rows), "lists": lists}


def tally(rows: Iterable[dict[str, Any]]) -> dict[str, int]:
    """`models · ok · resting · off`: ok + resting + off == models (the seed's folded-line counters)."""
    counts = {"models": 0, "ok": 0, "resting": 0, "off": 0}
    for row in rows:
        counts["models"] += 1
        if row["state"] == "off":
            counts["off"] += 1
        elif row["state"] in ("cooling", "quota"):
            counts["resting"] += 1
        else:
            counts["ok"] += 1
    return counts


def _row(gw: Engine, catalog: Catalog, route: CatalogRoute, now: float) -> dict[str, Any]:
    candidate, reason = catalog.route_status(route)
    h = gw.health.snapshot(route.key, now)
    if not candidate:
        state = "off"
    elif h.state is RouteState.UNAVAILABLE:
        state = "quota" if h.quota_rest else "cooling"
    elif h.state is RouteState.DEGRADED:
        state = "failing"
    elif h.state is RouteState.UNKNOWN:
        state = "untested"
    else:
        state = "ok"
    owner = catalog.pool_of_route(route.key)
    return {
        "key": route.key,
        "channel": route.provider_id,
        "model": route.model_id,
        "pool": owner.id if owner is not None else None,
        "state": state,
        "on": candidate,
        "reason": REASONS.get(reason) if reason else None,
        "switchable": reason not in STRUCTURAL,
        "images": route.capabilities.accepts_images,
        "ttft_ms": round(h.ewma_ttft * 1000, 1) if h.ewma_ttft is not None else None,
        "median_tps": round(h.median_tps, 1) if h.median_tps is not None else None,
        "attempts": h.attempts,
        "successes": h.successes,
        "failures": h.failures,
        "rest_remaining": round(h.rest_remaining, 1),
        "last_error_kind": h.last_error_kind.value if h.last_error_kind else None,
    }


def _layers(gw: Engine) -> dict[str, str]:
    from modelpool.config.layers import effective_settings

    wanted = set(SWITCH_KEYS)
    return {
        s.key: s.layer
        for s in effective_settings(gw.loaded.file_layer, gw.dashboard_layer)
        if s.key in wanted
    }


# --- switching -----------------------------------------------------------------------------------


def switch_patch(
    effective: PoolConfig,
    file_pool: PoolConfig,
    catalog: Catalog,
    key: str,
    enabled: bool,
    scope: str = "model",
) -> dict[str, Any]:
    """The dashboard-layer patch (dotted keys) that makes one roster switch say `enabled`.

    `effective` is the pool config in force, `file_pool` the one without the dashboard layer: a list
    that ends up equal to the file's value is handed back to the file (None) instead of being copied.
    Raises ValueError for a switch that cannot be expressed (unknown key, structural reason, twin channel).
    """
    lists = {k: list(_current(effective, k)) for k in SWITCH_KEYS}
    if scope == "provider":
        _switch_channel(lists, effective, catalog, key, enabled)
    elif scope == "model":
        route = catalog.routes.get(key)
        if route is not None:
            _switch_row(lists, effective, catalog, route, enabled)
        else:
            _switch_bare(lists, catalog, key, enabled)
    else:
        raise ValueError(f"scope must be 'model' or 'provider', not {scope!r}")
    patch: dict[str, Any] = {}
    for k, value in lists.items():
        if value == _current(effective, k):
            continue
        patch[k] = None if value == _current(file_pool, k) else value
    return patch


def _switch_row(
    lists: dict[str, list[str]], pool: PoolConfig, catalog: Catalog, route: CatalogRoute, enabled: bool
) -> None:
    low = route.key.lower()
    lists["pool.disabled"] = [d for d in lists["pool.disabled"] if d.strip().lower() != low]
    lists["pool.enabled"] = [e for e in lists["pool.enabled"] if e.strip().lower() != low]
    if not enabled:
        lists["pool.disabled"].append(route.key)
        return
    _, reason = catalog.route_status(route)
    if reason in STRUCTURAL:
        raise ValueError(
            f"{route.key} is out of rotation for a reason the roster cannot lift ({REASONS[reason]}); "
            "change the config file"
        )
    # Only add a row-level `enabled` entry when something blanket (a bare id or glob, the channel
    # flag, the twin rule) would still keep the row out: redundant entries make the list unreadable.
    trial = pool.model_copy(update={"disabled": lists["pool.disabled"], "enabled": lists["pool.enabled"]})
    candidate, _ = st.StatusRules(trial).status(route, non_chat=route.key in catalog.non_chat)
    if not candidate:
        lists["pool.enabled"].append(route.key)


def _switch_bare(lists: dict[str, list[str]], catalog: Catalog, key: str, enabled: bool) -> None:
    """A bare model id or glob switches every channel serving it (seed: `disabledModels` entries)."""
    key = key.strip()
    if not key:
        raise ValueError("'key' must be a route key, a model id or a provider id")
    low = key.lower()
    present = any(d.strip().lower() == low for d in lists["pool.disabled"])
    if not present and not any(
        matches_selector(key, r.key, r.model_id, r.normalized) for r in catalog.routes.values()
    ):
        raise ValueError(f"no route matches {key!r}")
    lists["pool.disabled"] = [d for d in lists["pool.disabled"] if d.strip().lower() != low]
    if not enabled:
        lists["pool.disabled"].append(key)


def _switch_channel(
    lists: dict[str, list[str]], pool: PoolConfig, catalog: Catalog, pid: str, enabled: bool
) -> None:
    if pid not in catalog.providers and not any(r.provider_id == pid for r in catalog.routes.values()):
        raise ValueError(f"unknown channel {pid!r}")
    if twin_source(pid, pool.twin_suffixes) is not None:
        raise ValueError(
            f"{pid} is a vision channel: it has no channel switch (the twin rule keeps its rows out); "
            "use a row switch"
        )
    low = pid.lower()
    if not enabled:
        if not _any_glob(lists["pool.disabled_providers"], pid):
            lists["pool.disabled_providers"].append(pid)
        lists["pool.enabled"] = [e for e in lists["pool.enabled"] if not _in_channel(catalog, e, pid)]
        return
    kept = [p for p in lists["pool.disabled_providers"] if p.strip().lower() != low]
    lists["pool.disabled_providers"] = kept
    blanket = [p for p in lists["pool.disabled_providers"] if glob_match(p, pid)]
    if blanket:
        raise ValueError(f"{pid} is closed by the pattern {blanket[0]!r}; edit or remove that entry")


def _in_channel(catalog: Catalog, entry: str, pid: str) -> bool:
    route = catalog.routes.get(entry.strip())
    if route is not None:
        return route.provider_id == pid
    return entry.strip().lower().startswith(pid.lower() + "/")


def _current(pool: PoolConfig, dotted: str) -> list[str]:
    return list(getattr(pool, dotted.split(".", 1)[1]))


def _any_glob(patterns: Iterable[str], value: str) -> bool:
    return any(glob_match(p.strip(), value) for p in patterns)


# --- HTTP ----------------------------------------------------------------------------------------


async def models_get(gw: Engine, request: Request) -> Response:
    return json_response(roster(gw))


async def models_post(gw: Engine, request: Request) -> Response:
    from modelpool.config.layers import validate_dashboard_patch

    body = orjson.loads(await request.body() or b"{}")
    if not isinstance(body, dict):
        raise ValueError("expected a JSON object {key, enabled, scope}")
    key, enabled, scope = body.get("key"), body.get("enabled"), body.get("scope") or "model"
    if not isinstance(key, str) or not key.strip():
        raise ValueError("'key' must be a non-empty string")
    if not isinstance(enabled, bool):
        raise ValueError("'enabled' must be true or false")
    rt = gw.runtime
    patch = switch_patch(rt.config.pool, gw.loaded.config.pool, rt.catalog, key.strip(), enabled, scope)
    if patch:
        await gw.set_dashboard(validate_dashboard_patch(patch))
    return json_response(roster(gw))


def roster_routes() -> list[Route]:
    return [
        Route("/admin/models", guard(models_get), methods=["GET"]),
        Route("/admin/models", guard(models_post), methods=["POST"]),
    ]
