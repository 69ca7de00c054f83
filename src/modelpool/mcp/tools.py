"""The MCP tools: one implementation over an `AdminClient`, served by both transports.

Every tool answers with a JSON object (structured content, also sent as JSON text) that starts with a
one-line `summary` for the model to read; the rest are the admin API's own facts. A refusal from the
admin API (unknown route, unknown pool, no aggregator, gateway down) comes back as a tool error.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import Field

from modelpool import __version__
from modelpool.mcp.client import AdminClient, AdminError

INSTRUCTIONS = (
    "modelpool is the LLM gateway serving this agent: a model name is a pool of routes (provider/model) "
    "and modelpool picks the route for every call. Use modelpool_status to see what serves you and what is "
    "in force, modelpool_period for peak/idle pricing, modelpool_rank for an aggregator's inner providers, "
    "modelpool_probe to refresh live measurements (spends a little quota), and modelpool_pin to put a route "
    "at the head of its pool (or clear the pin)."
)
MAX_PROBE = 64

STATUS_DOC = """What serves each model right now: pools and their routes in walk order with state
(healthy / degraded / unavailable / off), rests, TTFT and success rate; operator pins; the last failures;
the peak/idle period; providers; and the settings in force right now with the layer each comes from
(the same facts as `modelpool status --json`). Read-only, spends nothing."""

PROBE_DOC = """Send one minimal live request ("ping") to each route of the named pools or routes, to refresh
TTFT, throughput and rests (a success ends a rest, a failure starts one). Spends provider quota, so it is
bounded: at most `max_requests` requests, each cut off after `timeout` seconds. Reports each result, what
was spent (requests and tokens) and the routes skipped by the bound."""

PIN_DOC = """Pin a route (`provider/model`) at the head of its pool's order, so the next calls to that pool
try it first (the ranking still orders the rest); or clear a pool's pin with `clear: true` and `pool`.
Pins live in the gateway's state store; this never writes the config file. Returns the pin and all
operator pins now in force."""

RANK_DOC = """The ranking table of an aggregator (Vercel AI Gateway / OpenRouter) for a model: its inner
providers fastest first with throughput, latency, uptime and price, the order modelpool sends, and which
inner provider served the latest session. `model` is an aggregator model id (e.g.
`deepseek/deepseek-v4.1-flash-1017`), a route key, or a pool that has an aggregator route."""

PERIOD_DOC = """Whether it is peak or idle (off-peak) pricing time right now (or at `at`), the local time,
why (working day, holiday, make-up workday, window), and when the next flip happens."""


def _tool_error(exc: AdminError) -> ToolError:
    return ToolError(str(exc))


def build_server(client: AdminClient, *, stateless_http: bool = False) -> FastMCP:
    """A FastMCP server with modelpool's five tools, answering through `client`."""
    server = FastMCP(
        "modelpool",
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        stateless_http=stateless_http,
        json_response=stateless_http,
        # `/mcp` sits behind the admin token; the gateway may be bound to any host name.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    server._mcp_server.version = __version__

    @server.tool(name="modelpool_status", description=STATUS_DOC)
    async def modelpool_status() -> dict[str, Any]:
        try:
            status = await client.get("/admin/status")
            pins = await client.get("/admin/pins")
        except AdminError as exc:
            raise _tool_error(exc) from None
        return summarise_status(status, pins.get("pins") or {})

    @server.tool(name="modelpool_probe", description=PROBE_DOC)
    async def modelpool_probe(
        models: Annotated[
            list[str] | None,
            Field(description="Pool ids or route keys to probe; empty or omitted: every pool."),
        ] = None,
        max_requests: Annotated[
            int, Field(ge=1, le=MAX_PROBE, description="At most this many requests (quota spent).")
        ] = 4,
        timeout: Annotated[float, Field(gt=0, le=120, description="Seconds per probe request.")] = 20.0,
    ) -> dict[str, Any]:
        body = {"models": models or [], "max_requests": max_requests, "timeout": timeout}
        try:
            report = await client.post("/admin/probe", body)
        except AdminError as exc:
            raise _tool_error(exc) from None
        return summarise_probe(report)

    @server.tool(name="modelpool_pin", description=PIN_DOC)
    async def modelpool_pin(
        route: Annotated[
            str | None, Field(description="Route key `provider/model` to pin (omit when clearing).")
        ] = None,
        pool: Annotated[
            str | None, Field(description="Pool id (default: the route's pool; required when clearing).")
        ] = None,
        clear: Annotated[bool, Field(description="Remove the pool's pin instead of setting one.")] = False,
    ) -> dict[str, Any]:
        if clear and pool is None and route is None:
            raise ToolError("give `pool` (or the pinned `route`) with `clear: true`")
        if not clear and route is None:
            raise ToolError("give `route` (provider/model) to pin, or `clear: true` with `pool`")
        body: dict[str, Any] = {"route": route, "pool": pool}
        if clear:
            body["clear"] = True
        try:
            result = await client.post("/admin/pin", {k: v for k, v in body.items() if v is not None})
            pins = await client.get("/admin/pins")
        except AdminError as exc:
            raise _tool_error(exc) from None
        if result.get("route"):
            summary = f"pinned {result['route']} at the head of pool {result['pool']}"
        else:
            summary = f"pin cleared for pool {result['pool']}"
        return {"summary": summary, **result, "pins": pins.get("pins") or {}}

    @server.tool(name="modelpool_rank", description=RANK_DOC)
    async def modelpool_rank(
        model: Annotated[str, Field(description="Aggregator model id, route key, or pool id.")],
        refresh: Annotated[bool, Field(description="Drop cached stats and fetch them again.")] = False,
        session: Annotated[
            str | None, Field(description="Show the served-by line for this session id.")
        ] = None,
    ) -> dict[str, Any]:
        query = {"refresh": "1"} if refresh else {}
        if session:
            query["session"] = session
        try:
            report = await client.get("/admin/ranking/" + model.strip("/"), query)
        except AdminError as exc:
            raise _tool_error(exc) from None
        return summarise_rank(report)

    @server.tool(name="modelpool_period", description=PERIOD_DOC)
    async def modelpool_period(
        at: Annotated[str | None, Field(description="ISO 8601 moment to ask about (default: now).")] = None,
    ) -> dict[str, Any]:
        try:
            report = await client.get("/admin/period", {"at": at} if at else None)
        except AdminError as exc:
            raise _tool_error(exc) from None
        return {"summary": period_line(report), **report}

    return server


def period_line(p: dict[str, Any]) -> str:
    line = f"{p.get('period')} at {p.get('local_date')} {p.get('local_time')} ({p.get('time_zone')})"
    if p.get("why"):
        line += f": {p['why']}"
    if p.get("next_flip"):
        line += f"; next flip to {p.get('next_period')} at {p['next_flip']}"
    return line


def summarise_status(status: dict[str, Any], pins: dict[str, Any]) -> dict[str, Any]:
    rows = {r["route"]: r for r in status.get("ranking", [])}
    keep = ("state", "mark", "off_reason", "rest_remaining", "ewma_ttft_ms", "median_tps", "success_rate")
    pools = {
        pool: [{"route": key, **{k: rows.get(key, {}).get(k) for k in keep}} for key in keys]
        for pool, keys in status.get("pools", {}).items()
    }
    resting = [
        {"route": r["route"], "mark": r.get("mark"), "rest_remaining": r.get("rest_remaining")}
        for r in status.get("ranking", [])
        if r.get("state") == "unavailable"
    ]
    period = status.get("period") or {}
    parts = [
        f"modelpool {status.get('version')}: {len(pools)} pools, {len(rows)} routes",
        f"{len(resting)} resting" if resting else "none resting",
        f"{len(status.get('last_failures') or [])} recent failures",
        "pins: " + (", ".join(f"{p}→{r}" for p, r in pins.items()) if pins else "none"),
        "period " + period_line(period) if period else "",
    ]
    if status.get("config_error"):
        parts.append("last config edit rejected")
    return {
        "summary": "; ".join(p for p in parts if p),
        "version": status.get("version"),
        "enabled": status.get("enabled"),
        "config": {
            "path": status.get("config_path"),
            "version": status.get("config_version"),
            "error": status.get("config_error"),
        },
        "state": status.get("state"),
        "period": period,
        "pools": pools,
        "pins": pins,
        "resting": resting,
        "last_failures": status.get("last_failures") or [],
        "warnings": status.get("warnings") or [],
        "providers": status.get("providers") or [],
        "aggregators": status.get("aggregators"),
        "in_force": status.get("in_force") or [],
    }


def summarise_probe(report: dict[str, Any]) -> dict[str, Any]:
    spent = report.get("spent") or {}
    results = report.get("results") or []
    ok = sum(1 for r in results if r.get("ok"))
    summary = (
        f"probed {len(results)} routes ({ok} ok, {len(results) - ok} failed); spent "
        f"{spent.get('requests', 0)} requests, {spent.get('prompt_tokens', 0)} prompt + "
        f"{spent.get('completion_tokens', 0)} completion tokens"
    )
    if report.get("skipped"):
        summary += f"; skipped {len(report['skipped'])} over the bound"
    return {"summary": summary, **report}


def summarise_rank(report: dict[str, Any]) -> dict[str, Any]:
    order = report.get("order") or []
    summary = f"{report.get('model')} via {report.get('route')}: "
    summary += ("order " + " > ".join(str(o) for o in order)) if order else "no ranking"
    if report.get("error"):
        summary += f" ({report['error']})"
    return {"summary": summary, **report}
