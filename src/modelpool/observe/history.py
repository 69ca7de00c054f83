"""A finished call as an entry of its session's history (SPEC §8): what `/admin/sessions/{id}`, the
dashboard's session page and `modelpool sessions ID` list. Built in the background (the history book's
flush), from the call's trace, never on the request path."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from modelpool.observe.trace import CallTrace, switches, usage_tokens


def session_entry(trace: CallTrace, wall_at: Callable[[float], float]) -> tuple[str, dict[str, Any]] | None:
    call = trace.call
    if call is None or not call.session_id:
        return None  # refused before it had a pool (bad body, unknown model, key): no session to list
    state = trace.walker.state if trace.walker is not None else None
    usage = getattr(state, "usage", None)
    if usage:
        tin, tout = usage.get("prompt_tokens"), usage.get("completion_tokens")
        cached = usage.get("cached_tokens") or 0
    else:  # no usage at all (a call that was not served: a served one has at least the estimate)
        tin, tout = usage_tokens(trace)
        cached = 0
    attempts = [{"route": a.route, "kind": a.kind, "status": a.status} for a in trace.attempts]
    if trace.served is not None:
        attempts.append({"route": trace.served, "kind": None, "status": trace.status})
    ttft = trace.ttft
    cost = getattr(state, "cost", None)
    return call.session_id, {
        "at": round(wall_at(trace.t0), 3),
        "request_id": trace.request_id,
        "dialect": trace.ingress,
        "model": call.requested_model,
        "pool": call.pool.id,
        "route": trace.served,
        "purpose": call.purpose,
        "stream": call.stream,
        "effort": getattr(state, "effort", None),
        "outcome": trace.outcome,
        "status": trace.status,
        "attempts": attempts,
        "switches": [{"from": f, "to": t, "kind": k} for f, t, k in switches(trace.attempts, trace.served)],
        "hedged": getattr(state, "hedged", None),
        "tokens_in": tin,
        "tokens_cached": cached,
        "tokens_out": tout,
        "cost_usd": round(cost, 10) if cost is not None else None,
        "ttft_ms": round(ttft * 1000, 1) if ttft is not None else None,
        "latency_ms": round(trace.total * 1000, 1),
    }
