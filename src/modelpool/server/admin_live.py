"""Admin API for what happens live: sessions, pins, questions, probes and the event stream."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from modelpool.catalog import UnknownModel
from modelpool.server.admin_guard import guard, json_response

if TYPE_CHECKING:
    from modelpool.engine import Engine

KEEPALIVE = 15.0  # seconds between SSE comments, so proxies keep an idle watcher connected


async def _body(request: Request) -> dict[str, Any]:
    data = orjson.loads(await request.body() or b"{}")
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    return data


LIST_LIMIT = 500  # sessions in one `GET /admin/sessions` (most recently active first; `?limit=` up to kept)


async def sessions(gw: Engine, request: Request) -> Response:
    """Every session's live route (every replica's when the state is shared: the fleet view) with its
    calls, tokens and cost so far (the history store), most recently active first. A session whose calls
    all failed, or one from before a restart (sqlite, redis), has history but no live route."""
    limit = _limit(request.query_params.get("limit"), gw.runtime.config.sessions.kept)
    live = {s["session"]: s for s in gw.fleet.all_sessions()}
    try:
        summaries = await gw.history.summaries(limit)
    except Exception as exc:  # the store is down: the live routes still answer, and say so
        return json_response({"sessions": list(live.values())[:limit], "history_error": str(exc)})
    rows: dict[str, dict[str, Any]] = {}
    for summary in summaries:
        row = {**summary, **live.get(summary["session"], {})}
        row["last_route"] = summary["route"]
        rows[summary["session"]] = row
    for sid, lv in live.items():
        rows.setdefault(sid, lv)
    ordered = sorted(rows.values(), key=lambda r: -max(r.get("last_at") or 0, r.get("at") or 0))
    return json_response({"sessions": ordered[:limit]})


def _limit(given: str | None, kept: int) -> int:
    if given is None:
        return min(LIST_LIMIT, kept)
    try:
        value = int(given)
    except ValueError:
        raise ValueError(f"limit must be a whole number, got {given!r}") from None
    if value < 1:
        raise ValueError("limit must be at least 1")
    return min(value, kept)


async def session(gw: Engine, request: Request) -> Response:
    """One session: its live route, why the last plan ordered the routes as it did, its pins, and its
    calls (route, attempts, switches, hedges, tokens, cost, time to first token, latency, outcome)."""
    sid = request.path_params["sid"]
    live, here = gw.fleet.session(sid)
    plan = gw.last_plans.get(sid)
    pins = {pool: pin.route for (s, pool), pin in gw.pins.sessions().items() if s == sid}
    history_error = None
    try:
        history = await gw.history.session(sid)
    except Exception as exc:  # the store is down: what this process knows still answers, and says so
        history, history_error = None, str(exc)
    if live is None and plan is None and not pins and history is None:
        return json_response(
            {"error": {"message": f"unknown session {sid!r}", "type": "not_found_error"}}, 404
        )
    return json_response(
        {
            "session": sid,
            "live_route": live,
            # The plan is this process's: it explains the live route only when this replica served it.
            "last_plan": plan.explain() if plan is not None and (here or live is None) else None,
            "pins": pins,
            # SPEC §3.10: the routes whose signed reasoning this conversation carries (digests kept per route)
            "signers": gw.signers.of_session(sid),
            "summary": history["summary"] if history else None,
            "calls": history["calls"] if history else [],
            "calls_kept": gw.runtime.config.sessions.calls_kept,
            **({"history_error": history_error} if history_error else {}),
        }
    )


async def pin(gw: Engine, request: Request) -> Response:
    body = await _body(request)
    rt = gw.runtime
    route = body.get("route")
    pool_id = body.get("pool")
    if route is not None and route not in rt.catalog.routes:
        raise ValueError(f"unknown route {route!r}")
    if pool_id is None:
        if route is None:
            raise ValueError("give 'pool' (with 'clear': true) or 'route'")
        owner = rt.catalog.pool_of_route(route)
        if owner is None:
            raise ValueError(f"route {route!r} belongs to no pool")
        pool_id = owner.id
    if pool_id not in rt.catalog.pools:
        raise ValueError(f"unknown pool {pool_id!r}")
    if body.get("clear"):
        gw.pins.set_operator(pool_id, None)
        return json_response({"ok": True, "pool": pool_id, "route": None})
    if route is None:
        raise ValueError("'route' is required unless 'clear' is true")
    gw.pins.set_operator(pool_id, route)
    gw.events.publish("pin", pool=pool_id, route=route)
    return json_response({"ok": True, "pool": pool_id, "route": route})


async def pins(gw: Engine, request: Request) -> Response:
    return json_response({"pins": gw.pins.operators()})


async def questions(gw: Engine, request: Request) -> Response:
    return json_response({"questions": gw.fleet.pending_questions()})


async def answer(gw: Engine, request: Request) -> Response:
    body = await _body(request)
    text = body.get("answer")
    if not isinstance(text, str) or not text.strip():
        raise ValueError("'answer' must be a non-empty string ('switch', 'keep' or free text)")
    try:
        q = gw.fleet.answer(request.path_params["qid"], text)
    except KeyError:
        return json_response({"error": {"message": "unknown question", "type": "not_found_error"}}, 404)
    except RuntimeError as exc:
        return json_response({"error": {"message": str(exc), "type": "unavailable_error"}}, 503)
    return json_response(q)


async def probe(gw: Engine, request: Request) -> Response:
    from modelpool.engine.probe import probe as run_probe

    body = await _body(request)
    models = body.get("models") or []
    if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
        raise ValueError("'models' must be a list of pool ids or route keys")
    max_requests = int(body.get("max_requests", 8))
    timeout = float(body.get("timeout", 20))
    try:
        report = await run_probe(gw, models, max_requests, timeout)
    except UnknownModel as exc:
        return json_response(
            {"error": {"message": f"unknown model {exc.name!r}", "type": "not_found_error"}}, 404
        )
    return json_response(report.to_dict())


async def events(gw: Engine, request: Request) -> Response:
    replay = int(request.query_params.get("replay", "0") or 0)
    queue = gw.events.subscribe()

    async def stream() -> AsyncIterator[bytes]:
        try:
            yield b": connected\n\n"
            for event in gw.events.recent(replay) if replay > 0 else []:
                yield _sse(event)
            while True:
                try:
                    event = await asyncio.wait_for(queue.get(), KEEPALIVE)
                except TimeoutError:
                    yield b": keep-alive\n\n"
                    continue
                yield _sse(event)
        finally:
            gw.events.unsubscribe(queue)

    headers = {"cache-control": "no-cache", "x-accel-buffering": "no"}
    return StreamingResponse(stream(), media_type="text/event-stream", headers=headers)


def _sse(event: dict[str, Any]) -> bytes:
    return b"event: " + event["type"].encode() + b"\ndata: " + orjson.dumps(event) + b"\n\n"


def live_routes() -> list[Route]:
    return [
        Route("/admin/sessions", guard(sessions), methods=["GET"]),
        Route("/admin/sessions/{sid:path}", guard(session), methods=["GET"]),
        Route("/admin/pin", guard(pin), methods=["POST"]),
        Route("/admin/pins", guard(pins), methods=["GET"]),
        Route("/admin/questions", guard(questions), methods=["GET"]),
        Route("/admin/questions/{qid}", guard(answer), methods=["POST"]),
        Route("/admin/probe", guard(probe), methods=["POST"]),
        Route("/admin/events", guard(events), methods=["GET"]),
    ]
