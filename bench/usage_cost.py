"""Per-call CPU of the cost and limit bookkeeping (issue #19), in µs per call, in process.

What a served call adds for SPEC §14, measured against the same loop without it:
- every call: the prices in force at the call's start (`PriceBook.pricer`), the attempt's usage and cost
  (`WalkState.add_usage`), and the call's end (`Accounts.finish`: the usage book, the cost metric series);
- a key with a budget, rpm and tpm on top (local backends): the estimate (the body's token estimate, the
  dearest priced route), admission (`Limits.admit`: reservation, rate window) and settlement.
Redis budget keys add one round trip at admission (a network wait, not CPU on the loop; see README).

    python bench/usage_cost.py [--calls 20000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import time
import timeit

import orjson

from modelpool.config import load_config
from modelpool.gateway import Gateway
from modelpool.keys import ClientKey
from modelpool.walk.walker import WalkState

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


def gateway() -> Gateway:
    cfg = {
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=5, help="best of N runs (a shared machine is noisy)")
    args = ap.parse_args()
    gw = gateway()
    team = gw.accounts.keyring().keys[1]

    # Interleaved rounds, best of each: the three loops see the same machine conditions.
    runs: dict[str, list[float]] = {"base": [], "plain": [], "limited": []}
    for _ in range(args.repeat):
        runs["base"].append(asyncio.run(run(gw, args.calls, None, False)))
        runs["plain"].append(asyncio.run(run(gw, args.calls, None, True)))
        runs["limited"].append(asyncio.run(run(gw, args.calls, team, True)))
    base, plain, limited = (min(runs[k]) for k in ("base", "plain", "limited"))
    ref = min(timeit.repeat("sum(range(100))", number=args.calls, repeat=args.repeat)) / args.calls * 1e6
    print(f"reference: sum(range(100))              {ref:6.2f} µs  (how fast this machine is right now)")
    print(f"baseline (prepare a call):              {base:6.2f} µs/call")
    print(f"cost + usage bookkeeping (any call):    {plain - base:6.2f} µs/call added")
    print(f"+ budget/rpm/tpm key (estimate, admit): {limited - base:6.2f} µs/call added")


if __name__ == "__main__":
    main()
