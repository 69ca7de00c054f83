"""Planning cost against catalog size (issue #21), in-process like bench/plan.py.

The same pool planned in two catalogs of very different size: a pool of 3 routes in the 10,000-route
catalog against the same 3 providers alone (the "3 providers" baseline), and the largest pool (30
routes) against a catalog of just those 30 routes. If per-call work depends only on the pool, each pair
costs the same. CPU time of this process (`time.process_time`), prepare + plan per call, the two
gateways alternated repeat by repeat so both see the same machine noise; median of the repeats.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import orjson

# A realistic request: a 600-character system prompt, a 1,400-character user message (as bench/plan.py).
_MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant. " * 20},
    {"role": "user", "content": "Summarise the following text in one sentence. " * 30},
]
HEADERS = {"authorization": "Bearer x"}
clock = time.process_time  # planning is pure computation: wall time would count the neighbours


def serving(config: dict[str, Any], pool: str) -> list[dict[str, Any]]:
    """The providers of `config` that serve `pool` (by normalized id), each reduced to that one model."""
    from modelpool.catalog.normalize import normalize_model_id

    out = []
    for p in config["providers"]:
        ids = [m for m in p["models"] if normalize_model_id(m) == pool]
        if ids:
            out.append({**p, "models": ids})
    return out


def in_process_config(config: dict[str, Any], strategy: str, providers: list[dict[str, Any]] | None) -> dict:
    """`config` for an in-process gateway (nothing is called: the plan never leaves the process)."""
    base = {k: v for k, v in config.items() if k not in ("server", "state", "pool", "providers")}
    return {
        **base,
        "providers": providers if providers is not None else config["providers"],
        "pool": {"strategy": strategy, "sticky": True},
        "state": {"backend": "memory"},
        "server": {"admin_token": "bench-admin-token-0123456789"},
    }


def gateway(config: dict[str, Any], pool: str) -> Any:
    from modelpool.gateway import Gateway
    from modelpool.walk.walker import AttemptResult

    gw = Gateway.from_config(config)
    keys = [r.key for r in gw.runtime.catalog.pools[pool].routes]
    for i, key in enumerate(keys):  # measurements, so the speed strategies have something to sort
        for _ in range(3):
            gw.sink.success(key, AttemptResult(ttft=0.2 + i / 50, tokens_per_s=400 - 10 * i))
    return gw


def _body(pool: str) -> dict[str, Any]:
    return orjson.loads(orjson.dumps({"model": pool, "messages": _MESSAGES}))


def _per_call_us(gw: Any, body: dict[str, Any], calls: int) -> float:
    rt, planner = gw.runtime, gw.planner
    t0 = clock()
    for _ in range(calls):
        planner.plan(rt, gw.prepare("openai", body, HEADERS), time.time())
    return (clock() - t0) / calls * 1e6


def compare(small: Any, large: Any, pool: str, calls: int, repeats: int) -> dict[str, Any]:
    """prepare + plan µs per call of `pool` in both gateways, alternated; medians and the ratio."""
    body = _body(pool)
    for gw in (small, large):  # warm-up: memoised base order and ranking, allocator, caches
        _per_call_us(gw, body, 2000)
    a: list[float] = []
    b: list[float] = []
    for i in range(repeats):
        order = ((small, a), (large, b)) if i % 2 == 0 else ((large, b), (small, a))
        for gw, out in order:
            out.append(_per_call_us(gw, body, calls))
    plan = large.planner.plan(large.runtime, large.prepare("openai", body, HEADERS), time.time())
    small_us, large_us = statistics.median(a), statistics.median(b)
    return {
        "pool": pool,
        "routes": len(large.runtime.catalog.pools[pool].routes),
        "small_catalog_routes": len(small.runtime.catalog.routes),
        "large_catalog_routes": len(large.runtime.catalog.routes),
        "small_us": small_us,
        "large_us": large_us,
        "small_runs": a,
        "large_runs": b,
        "ratio": large_us / small_us,
        "candidates": len(plan.candidates),
        "skipped": len(plan.skipped),
    }


def measure(config: dict[str, Any], pools: list[str], strategy: str, calls: int, repeats: int) -> list[dict]:
    """For each pool: a gateway on only its providers against the gateway on the whole catalog."""
    large_cfg = in_process_config(config, strategy, None)
    results = []
    for pool in pools:
        small = gateway(in_process_config(config, strategy, serving(config, pool)), pool)
        large = gateway(large_cfg, pool)
        results.append({"strategy": strategy, **compare(small, large, pool, calls, repeats)})
    return results
