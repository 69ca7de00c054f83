"""Per-call CPU of the cost, limit and hedge bookkeeping (issues #19, #21), in µs per call, in process.

What a served call adds for SPEC §14, measured against the same loop without it:
- every call: the prices in force at the call's start (`PriceBook.pricer`), the attempt's usage and cost
  (`WalkState.add_usage`), and the call's end (`Accounts.finish`: the usage book, the cost metric series);
- a key with a budget, rpm and tpm on top (local backends): the estimate (the body's token estimate, the
  dearest priced route), admission (`Limits.admit`: reservation, rate window) and settlement.
Redis budget keys add one round trip at admission (a network wait, not CPU on the loop; see README).
- `pool.hedge` on (issue #21's "measured with them on"): the walk of a served call whose first attempt
  answers in time, so no rival starts — the racer's task, the timed wait for its first event and the claim
  a relay makes — against the same walk over the same attempt with the hedge off. `all three` is the
  whole: a walk with hedging on, cost and usage, and a key with limits, against a plain walk.

    python bench/usage_cost.py [--calls 20000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import gc
import time
import timeit

import orjson
import uvloop

from modelpool.config import load_config
from modelpool.gateway import Gateway
from modelpool.hedge.race import RACER
from modelpool.keys import ClientKey
from modelpool.routing.call import Candidate
from modelpool.walk.walker import AttemptResult, WalkState

USAGE = {"prompt_tokens": 1200, "completion_tokens": 300, "cached_tokens": 800, "cache_creation_tokens": 0}
BODY = {
    "model": "m1",
    "max_tokens": 300,
    "messages": [
        {"role": "system", "content": "You are a helpful assistant. " * 20},
        {"role": "user", "content": "Summarise the following text, please. " * 40},
    ],
}

SIZE = len(orjson.dumps(BODY))  # the request body's length, as the server hands it to admission


def gateway(hedge: bool = False) -> Gateway:
    cfg: dict = {
        "state": {"backend": "memory"},
        "holidays": {"source": "bundled"},
        "providers": [
            {
                "id": p,
                "base_url": "http://127.0.0.1:9/v1",
                "api_key": "x",
                "models": ["m1"],
                "prices": {"input": 0.3 * (i + 1), "cached_input": 0.03, "output": 1.2},
            }
            for i, p in enumerate(("alpha", "beta", "gamma"))
        ],
        "server": {
            "api_keys": [
                "sk-plain",
                {
                    "key": "sk-team",
                    "name": "team",
                    "budget": {"usd": 1e9, "per": "day"},
                    "rpm": 10**9,
                    "tpm": 10**12,
                },
            ]
        },
    }
    if hedge:  # a fixed delay: the hedge is armed on every call and never fires (the attempt is instant)
        cfg["pool"] = {"hedge": {"enabled": True, "after": "2s"}}
    return Gateway(load_config(cfg), env={})


class _Walker:
    __slots__ = ("served", "state")

    def __init__(self, state: WalkState) -> None:
        self.state = state
        self.served = None


async def run(gw: Gateway, calls: int, key: ClientKey | None, account: bool) -> float:
    rt = gw.runtime
    accounts = gw.accounts
    route = "alpha/m1"
    t0 = time.process_time()  # CPU of this process: a busy shared machine preempts, it does not bill
    for _ in range(calls):
        call = gw.prepare("openai", dict(BODY), {})  # in both loops: subtracted by the baseline
        state = WalkState(pool=call.pool.id)
        if not account:
            continue
        ticket = await accounts.admit(key, call, SIZE) if key is not None else None
        state.pricer = rt.prices().pricer(gw.clock())
        state.add_usage(route, USAGE)
        accounts.finish(key.label if key else "-", ticket, _Walker(state), route)
        gw.observer.tally._add(
            gw.observer.tally.counters["modelpool_cost_usd"], (call.pool.id, route, "-"), 1.0
        )
    return (time.process_time() - t0) / calls * 1e6


async def _attempt(cand: Candidate) -> AttemptResult:
    """A served attempt as a relay ends it: in a hedge race, it claims the win first."""
    racer = RACER.get()
    if racer is not None:
        await racer.claim()
    return AttemptResult(ttft=0.05, tokens_per_s=None)


async def walk(gw: Gateway, calls: int, key: ClientKey | None, account: bool) -> float:
    """The walk of each call (plan, walker, one served attempt, health) plus, with `account`, what
    `run` adds: with a hedging gateway, everything the three features add to a call."""
    rt = gw.runtime
    accounts = gw.accounts
    t0 = time.process_time()
    for _ in range(calls):
        call = gw.prepare("openai", dict(BODY), {})
        walker = gw.walker(call)
        served = await walker.run(_attempt)
        if not account:
            continue
        ticket = await accounts.admit(key, call, SIZE) if key is not None else None
        walker.state.add_usage(served.key, USAGE)
        accounts.finish(key.label if key else "-", ticket, walker, served.key)
        gw.observer.tally._add(
            gw.observer.tally.counters["modelpool_cost_usd"], (call.pool.id, served.key, "-"), 1.0
        )
    del rt
    return (time.process_time() - t0) / calls * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=5, help="best of N runs (a shared machine is noisy)")
    args = ap.parse_args()
    gw = gateway()
    team = gw.accounts.keyring().keys[1]
    hedged_gw = gateway(hedge=True)
    hedged_team = hedged_gw.accounts.keyring().keys[1]
    # As `modelpool serve` does once started (Engine.settle_heap): the start-up heap leaves the collector's
    # reach, so a collection a call's allocations trigger does not walk the price library's tables.
    gc.freeze()

    # Interleaved rounds, best of each: the three loops see the same machine conditions.
    runs: dict[str, list[float]] = {"base": [], "plain": [], "limited": []}
    for _ in range(args.repeat):
        runs["base"].append(uvloop.run(run(gw, args.calls, None, False)))
        runs["plain"].append(uvloop.run(run(gw, args.calls, None, True)))
        runs["limited"].append(uvloop.run(run(gw, args.calls, team, True)))
    walks: dict[str, list[float]] = {"walk": [], "hedged": [], "all": []}
    for _ in range(args.repeat):
        walks["walk"].append(uvloop.run(walk(gw, args.calls, None, False)))
        walks["hedged"].append(uvloop.run(walk(hedged_gw, args.calls, None, False)))
        walks["all"].append(uvloop.run(walk(hedged_gw, args.calls, hedged_team, True)))
    base, plain, limited = (min(runs[k]) for k in ("base", "plain", "limited"))
    plain_walk, hedged, whole = (min(walks[k]) for k in ("walk", "hedged", "all"))
    ref = min(timeit.repeat("sum(range(100))", number=args.calls, repeat=args.repeat)) / args.calls * 1e6
    print(f"reference: sum(range(100))              {ref:6.2f} µs  (how fast this machine is right now)")
    print(f"baseline (prepare a call):              {base:6.2f} µs/call")
    print(f"cost + usage bookkeeping (any call):    {plain - base:6.2f} µs/call added")
    print(f"+ budget/rpm/tpm key (estimate, admit): {limited - base:6.2f} µs/call added")
    print(f"baseline walk (plan, one attempt):      {plain_walk:6.2f} µs/call")
    print(f"hedge armed, not fired:                 {hedged - plain_walk:6.2f} µs/call added")
    print(f"all three (hedge + cost + limited key): {whole - plain_walk:6.2f} µs/call added  (goal <= 20)")


if __name__ == "__main__":
    main()
