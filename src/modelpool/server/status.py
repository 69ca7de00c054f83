"""The facts behind `modelpool status` / `models`, `/admin/status` and `/admin/pools`.

Built on demand from the runtime snapshot and the health registry; never contains a provider key.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from modelpool import __version__
from modelpool.health.record import RouteHealth, RouteState

if TYPE_CHECKING:
    from modelpool.engine import Engine


def route_badge(health: RouteHealth, candidate: bool, reason: str | None) -> dict[str, Any]:
    mark = None
    if health.state is RouteState.UNAVAILABLE:
        mark = "QUOTA-REST" if health.quota_rest else "COOLDOWN"
    return {
        "state": health.state.value if candidate else "off",
        "candidate": candidate,
        "off_reason": reason,
        "mark": mark,
        "rest_remaining": round(health.rest_remaining, 1),
        "attempts": health.attempts,
        "successes": health.successes,
        "failures": health.failures,
        "last_error": health.last_error,
        "last_error_kind": health.last_error_kind.value if health.last_error_kind else None,
        "ewma_ttft_ms": round(health.ewma_ttft * 1000, 1) if health.ewma_ttft is not None else None,
        "median_tps": round(health.median_tps, 1) if health.median_tps is not None else None,
        "success_rate": round(health.success_rate_laplace, 3),
    }


def pools_report(gw: Engine) -> dict[str, Any]:
    rt = gw.runtime
    now = gw.clock()
    pools = []
    for pool in rt.catalog.pools.values():
        routes = []
        for route in pool.routes:
            candidate, reason = rt.catalog.route_status(route)
            endpoint = rt.endpoints.get(route.provider_id)
            routes.append(
                {
                    "route": route.key,
                    "provider": route.provider_id,
                    "provider_name": endpoint.name if endpoint else route.provider_id,
                    "model": route.model_id,
                    "images": route.capabilities.accepts_images,
                    **route_badge(gw.health.snapshot(route.key, now), candidate, reason),
                }
            )
        caps = pool.capabilities
        pools.append(
            {
                "id": pool.id,
                "name": pool.name,
                "group": pool.group,
                "context_window": caps.context_window,
                "efforts": list(caps.efforts) if caps.efforts is not None else None,
                "input_modalities": list(caps.input_modalities)
                if caps.input_modalities is not None
                else None,
                "tools": caps.tools,
                "routes": routes,
            }
        )
    return {"pools": pools, "strategy": rt.config.pool.strategy}


def status_report(gw: Engine) -> dict[str, Any]:
    from modelpool.config import effective_settings

    rt = gw.runtime
    now = gw.clock()
    ranking = []
    last_failures = []
    limits = rt.route_timeouts()
    for key in rt.catalog.routes:
        h = gw.health.snapshot(key, now)
        candidate, reason = rt.catalog.route_status(key)
        row = {"route": key, **route_badge(h, candidate, reason)}
        # How old the speed estimates are (issue #18): the newest own sample, and the throughput estimate.
        rec = gw.health.record(key)
        at = rec.sampled_at if rec is not None else None
        row["sample_age_s"] = round(now - at, 1) if at is not None else None
        row["median_tps"] = round(h.median_tps, 1) if h.median_tps is not None else None
        row["quota"] = gw.quota.describe(key, now)  # SPEC §3.8: what it announced is left (None: nothing)
        row["timeouts"] = limits[key].describe()  # SPEC §3.9: its limits in force and their layer
        ranking.append(row)
        if h.last_error:
            last_failures.append(
                {"route": key, "kind": row["last_error_kind"], "error": h.last_error, "at": h.last_error_at}
            )
    in_force = [
        {"key": s.key, "value": s.value, "layer": s.layer}
        for s in effective_settings(gw.loaded.file_layer, gw.dashboard_layer)
    ]
    from modelpool.periods import calendar_report, period_report

    return {
        "period": period_report(rt.policy(), datetime.fromtimestamp(now, UTC)),
        "calendar": calendar_report(gw.calendar),
        "aggregators": gw.aggregators.status(),
        "version": __version__,
        "enabled": True,
        "config_path": str(gw.loaded.path) if gw.loaded.path else None,
        "config_error": gw.config_error.errors if gw.config_error else None,
        "config_version": rt.version,
        "warnings": list(gw.loaded.warnings) + list(rt.catalog.warnings),
        "state": gw.state.describe(),
        "fleet": gw.fleet.describe(),
        "providers": [
            {
                "id": e.id,
                "name": e.name,
                "kind": e.kind,
                "has_key": e.has_key,
                "discovery_error": gw.discovery.errors.get(e.id),
            }
            for e in rt.endpoints.values()
        ],
        "discovered": {"pools": len(rt.catalog.pools), "routes": len(rt.catalog.routes)},
        "pools": {p.id: [r.key for r in p.routes] for p in rt.catalog.pools.values()},
        "ranking": ranking,
        "last_failures": last_failures,
        "in_force": in_force,
    }
