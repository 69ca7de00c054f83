"""Per-call cost of the observability bookkeeping (issue #11): `Observer.begin` + the timed attempt
wrapper + `Observer.done` (metrics, and the call's log line when INFO is enabled), in µs per call.

A micro-benchmark of the hot-path addition only, run in-process with a served non-stream call's shapes
(one attempt, usage in the body); the end-to-end figure is `overhead.py`'s.

    python bench/observe_cost.py [--calls 50000]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import logging
import time
import timeit
from types import SimpleNamespace

from modelpool.config import load_config
from modelpool.gateway import Gateway
from modelpool.logs import setup_logging


async def _attempt(cand: object) -> object:
    return SimpleNamespace(ttft=0.01)


def _fake(gw: Gateway) -> tuple[object, object, object]:
    pool = SimpleNamespace(id="deepseek-v4.1-flash")
    call = SimpleNamespace(pool=pool, stream=False, requested_model="deepseek-v4.1-flash")
    cand = SimpleNamespace(key="deepseek/deepseek-flash")
    # The walk's summed usage (issue #26: the log line and token counters read it, normalized).
    usage = {"prompt_tokens": 120, "completion_tokens": 40, "cached_tokens": 0, "cache_creation_tokens": 0}
    state = SimpleNamespace(
        attempts=[], switched_from=None, effort="high", usage=usage, dropped=[], cost=None, estimated=False
    )
    walker = SimpleNamespace(state=state, served=cand)
    relay = SimpleNamespace(obj={"usage": {"prompt_tokens": 120, "completion_tokens": 40}}, usage=usage)
    return call, walker, relay


async def _run(gw: Gateway, calls: int) -> float:
    call, walker, relay = _fake(gw)
    obs = gw.observer
    headers = {"content-type": "application/json"}
    t0 = time.perf_counter()
    for _ in range(calls):
        trace = obs.begin("openai", headers)
        trace.call, trace.walker, trace.relay = call, walker, relay
        await trace.timed(_attempt, obs.in_flight)(walker.served)
        obs.done(trace)
    return (time.perf_counter() - t0) / calls * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=5, help="best of N runs (a shared machine is noisy)")
    args = ap.parse_args()
    gw = Gateway(load_config({"state": {"backend": "memory"}, "holidays": {"source": "bundled"}}), env={})

    def best(fn: object) -> float:
        return min(asyncio.run(fn(args.calls)) for _ in range(args.repeat))  # type: ignore[operator]

    base = best(_baseline)
    logging.getLogger().setLevel(logging.WARNING)
    quiet = best(lambda n: _run(gw, n))
    setup_logging("info", "json", io.StringIO())
    logged = best(lambda n: _run(gw, n))
    ref = min(timeit.repeat("sum(range(100))", number=args.calls, repeat=args.repeat)) / args.calls * 1e6
    print(f"reference: sum(range(100))          {ref:6.2f} µs  (how fast this machine is right now)")
    print(f"empty loop (one awaited attempt):   {base:6.2f} µs/call")
    print(f"metrics only (log level warning):   {quiet - base:6.2f} µs/call added")
    print(f"metrics + JSON call line (info):    {logged - base:6.2f} µs/call added")


async def _baseline(calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        await _attempt(None)
    return (time.perf_counter() - t0) / calls * 1e6


if __name__ == "__main__":
    main()
