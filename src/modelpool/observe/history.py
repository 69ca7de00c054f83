"""A finished call as an entry of its session's history (SPEC §8): what `/admin/sessions/{id}`, the
dashboard's session page and `modelpool sessions ID` list.

At the call's end only a record of plain values is kept (`session_record`, a tuple): the trace would keep
the call's parsed body, its relay and its walk alive until the flush — half a second of a whole
conversation's objects for the collector to walk (issue #29). The entry itself is built in the background
(the history book's flush), never on the request path."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from modelpool.observe.trace import CallTrace, switches


def session_record(trace: CallTrace) -> tuple[Any, ...] | None:
    """What the history needs of a finished call, or None for a call that belongs to no session."""
    call = trace.call
    if call is None or not call.session_id:
        return None  # refused before it had a pool (bad body, unknown model, key): no session to list
    walker = trace.walker
    try:
        state = walker.state
        effort, hedged, usage, cost = state.effort, state.hedged, state.usage, state.cost
    except AttributeError:  # no walk (refused before it), or a stand-in without a walk's state
        effort = hedged = usage = cost = None
    return (
        call.session_id,
        trace.t0,
        trace.request_id,
        trace.ingress,
        call.requested_model,
        call.account_pool,  # a forced route is listed under the pool the client named (SPEC §14)
        trace.served,
        call.purpose,
        call.stream,
        effort,
        trace.outcome,
        trace.status,
        trace.attempts,
        hedged,
        usage,
        cost,
        trace.ttft,
        trace.total,
    )


def session_entry(record: tuple[Any, ...], wall_at: Callable[[float], float]) -> tuple[str, dict[str, Any]]:
    """A `session_record` as (session id, entry); the history book calls it at its flush."""
    sid, t0, request_id, ingress, model, pool, served, purpose, stream, effort = record[:10]
    outcome, status, tried, hedged, usage, cost, ttft, total = record[10:]
    if usage:
        tin, tout = usage.get("prompt_tokens"), usage.get("completion_tokens")
        cached = usage.get("cached_tokens") or 0
    else:  # no usage at all (a call that was not served: a served one has at least the estimate)
        tin = tout = None
        cached = 0
    attempts = [{"route": a.route, "kind": a.kind, "status": a.status} for a in tried] if tried else []
    if served is not None:
        attempts.append({"route": served, "kind": None, "status": status})
    return sid, {
        "at": round(wall_at(t0), 3),
        "request_id": request_id,
        "dialect": ingress,
        "model": model,
        "pool": pool,
        "route": served,
        "purpose": purpose,
        "stream": stream,
        "effort": effort,
        "outcome": outcome,
        "status": status,
        "attempts": attempts,
        "switches": [{"from": f, "to": t, "kind": k} for f, t, k in switches(tried, served)] if tried else [],
        "hedged": hedged,
        "tokens_in": tin,
        "tokens_cached": cached,
        "tokens_out": tout,
        "cost_usd": round(cost, 10) if cost is not None else None,
        "ttft_ms": round(ttft * 1000, 1) if ttft is not None else None,
        "latency_ms": round(total * 1000, 1),
    }
