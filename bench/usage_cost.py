"""Per-call CPU of the bookkeeping a served call carries (issues #19, #21, #29), in µs per call, in process.

Every loop runs a call as the server does (`client_api`): the trace, `prepare` (with the body's bytes and
an agent's session header), the plan and the walk over one served attempt, the pin and live route
(`Engine.finish`), the loop turning once (as it does many times per real call). What each feature adds on
top of that baseline walk, on its own and all five together (issue #29's "with all of them on"):

- `hedge`: `pool.hedge` on with a fixed delay: armed on every call, never fired (the attempt is instant) —
  the racer, the timer armed and cancelled, the claim a relay makes;
- `cost`: the attempt's usage and cost (`WalkState.add_usage` with the prices in force at the call's
  start), the call's end (`Accounts.finish`: the usage book) and the cost metric series;
- `key`: a key with a budget, rpm and tpm (local backends) on top of `cost`: the estimate (the body's
  tokens from its length, the dearest priced route), admission (`Limits.admit`) and settlement. Redis
  budget keys add one round trip at admission (a network wait, not CPU on the loop; see README);
- `history`: the session history (SPEC §8): the finished call's trace appended, and its share of the
  book's flush (the entry described, the memory store's summary and list) — off the request path but CPU
  all the same, so counted, the flush every 256 calls (0.5 s of a busy replica);
- `quota`: the route announces its rate limits as OpenAI does (`x-ratelimit-*` on every reply): the
  attempt's `QuotaBook.spend`, the check and `observe` the upstream client makes, the deferred reading of
  the headers, and the planner's quota gate on every later call. Off: a reply without those headers
  (the check alone, as on any reply).

    python bench/usage_cost.py [--calls 20000] [--repeat 5] [--profile] [--json]
    python bench/usage_cost.py --ab /tmp/base/src[,label=/tmp/step/src…] [--calls 20000] [--repeat 5]

Interleaved rounds (every variant once per round), best of `--repeat`; CPU time of this process
(`time.process_time`: a busy shared machine preempts, it does not bill). `--profile`: cProfile of the
all-on loop, the top functions by own time. `--ab SRC,…`: this bench run alternately on other trees'
sources (e.g. `git archive` of the base in /tmp) and on this one's, `--repeat` processes each.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time
import timeit
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import uvloop
from multidict import CIMultiDict

from modelpool.config import load_config
from modelpool.gateway import Gateway
from modelpool.health.quota_headers import announces_quota
from modelpool.hedge.race import RACER
from modelpool.keys import ClientKey
from modelpool.routing.call import Candidate
from modelpool.walk.walker import AttemptResult

try:  # what `Observer.done` hands the session history (issue #29); before it, the trace itself
    from modelpool.observe.history import session_record
except ImportError:  # the tree before issue #29, for an A/B run

    def session_record(trace: Any) -> Any:
        return trace


USAGE = {"prompt_tokens": 1200, "completion_tokens": 300, "cached_tokens": 800, "cache_creation_tokens": 0}
BODY = {
    "model": "m1",
    "max_tokens": 300,
    "messages": [
        {"role": "system", "content": "You are a helpful assistant. " * 20},
        {"role": "user", "content": "Summarise the following text, please. " * 40},
    ],
}
RAW = orjson.dumps(BODY)  # the request body's bytes, as the server hands them to `prepare` and admission
SIZE = len(RAW)
HEADERS = {"authorization": "Bearer sk-team", "x-session-id": "bench-session-1"}  # as an agent CLI sends
FLUSH_EVERY = 256

# An upstream reply's parsed headers (the connection's CIMultiDict): a plain one, and one announcing its
# rate limits as OpenAI's do on every reply (plenty left: no route is ever demoted).
PLAIN_REPLY = CIMultiDict(
    {"content-type": "application/json", "date": "Fri, 04 Dec 2026 19:00:00 GMT", "x-request-id": "req_1"}
)
QUOTA_REPLY = CIMultiDict(
    {
        **PLAIN_REPLY,
        "x-ratelimit-limit-requests": "10000",
        "x-ratelimit-limit-tokens": "2000000",
        "x-ratelimit-remaining-requests": "9999",
        "x-ratelimit-remaining-tokens": "1998500",
        "x-ratelimit-reset-requests": "6ms",
        "x-ratelimit-reset-tokens": "45ms",
    }
)


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


@dataclass(frozen=True)
class Features:
    hedge: bool = False
    cost: bool = False
    key: bool = False
    history: bool = False
    quota: bool = False

    @property
    def name(self) -> str:
        on = [f for f in ("hedge", "cost", "key", "history", "quota") if getattr(self, f)]
        return "+".join(on) or "baseline"


def attempt_for(gw: Gateway, quota: bool) -> Callable[[Candidate], Awaitable[AttemptResult]]:
    """A served attempt as a relay ends it: the upstream client's quota steps (`UpstreamClient.post`),
    and in a hedge race the claim of the win before its first write."""
    book = gw.client.quota
    reply = QUOTA_REPLY if quota else PLAIN_REPLY

    async def attempt(cand: Candidate) -> AttemptResult:
        route = cand.key
        if book is not None:
            book.spend(route)
            if announces_quota(reply):
                book.observe(route, reply)
        racer = RACER.get()
        if racer is not None:
            await racer.claim()
        return AttemptResult(ttft=0.05, tokens_per_s=None)

    return attempt


async def calls_loop(gw: Gateway, key: ClientKey, f: Features, calls: int) -> float:
    accounts = gw.accounts
    observer = gw.observer
    history = gw.history
    cost_series = observer.tally.counters["modelpool_cost_usd"]
    attempt = attempt_for(gw, f.quota)
    if not f.quota:
        gw.quota.clear()  # what an earlier quota round announced: this round's routes announce nothing
    sleep = asyncio.sleep
    t0 = time.process_time()
    for i in range(calls):
        trace = observer.begin("openai", HEADERS)
        call = gw.prepare("openai", dict(BODY), HEADERS, RAW)
        trace.call = call
        if f.key:
            trace.key = key.label
            trace.ticket = await accounts.admit(key, call, SIZE)
        walker = gw.walker(call)
        trace.walker = walker
        served = await walker.run(trace.timed(attempt, observer.in_flight))
        gw.finish(call, walker, None)
        trace.end()
        if f.cost:
            walker.state.add_usage(served.key, USAGE)
            accounts.finish(trace.key, trace.ticket, walker, served.key)
            observer.tally._add(cost_series, (call.pool.id, served.key, trace.key), walker.state.cost or 0.0)
        if f.history:
            history.add(session_record(trace))  # as `Observer.done` does
            if i % FLUSH_EVERY == FLUSH_EVERY - 1:
                await history.flush()
        await sleep(0)  # the loop turns: what a call deferred (the quota reading) runs
    if f.history:
        await history.flush()
    return (time.process_time() - t0) / calls * 1e6


VARIANTS = [
    Features(),
    Features(hedge=True),
    Features(cost=True),
    Features(cost=True, key=True),
    Features(history=True),
    Features(quota=True),
    Features(True, True, True, True, True),
]


def measure(calls: int, repeat: int) -> dict[str, float]:
    plain, hedged = gateway(), gateway(hedge=True)
    keys = {id(g): g.accounts.keyring().keys[1] for g in (plain, hedged)}
    # As `modelpool serve` does once started (Engine.settle_heap): the start-up heap leaves the collector's
    # reach, so a collection a call's allocations trigger does not walk the price library's tables.
    gc.freeze()
    runs: dict[str, list[float]] = {f.name: [] for f in VARIANTS}
    for _ in range(repeat):  # interleaved: every variant sees the same machine conditions
        for f in VARIANTS:
            gw = hedged if f.hedge else plain
            runs[f.name].append(uvloop.run(calls_loop(gw, keys[id(gw)], f, calls)))
    return {name: min(v) for name, v in runs.items()}


def profile(calls: int) -> None:
    import cProfile
    import pstats

    gw = gateway(hedge=True)
    key = gw.accounts.keyring().keys[1]
    gc.freeze()
    uvloop.run(calls_loop(gw, key, VARIANTS[-1], 2000))  # warm
    prof = cProfile.Profile()
    prof.enable()
    uvloop.run(calls_loop(gw, key, VARIANTS[-1], calls))
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(40)


LINES = [
    ("hedge", "hedge armed, not fired"),
    ("cost", "cost + usage"),
    ("cost+key", "cost + a budget/rpm/tpm key"),
    ("history", "session history"),
    ("quota", "quota (rate-limit headers read)"),
]
ALL = "hedge+cost+key+history+quota"


def added(best: dict[str, float]) -> dict[str, float]:
    """µs per call each feature adds to the baseline walk (the key: on top of cost), and all five."""
    base = best["baseline"]
    out = {name: best[name] - base for name, _ in LINES}
    out["key"] = best["cost+key"] - best["cost"]
    out["all five"] = best[ALL] - base
    return out


def reference(calls: int, repeat: int) -> float:
    return min(timeit.repeat("sum(range(100))", number=calls, repeat=repeat)) / calls * 1e6


def ab(others: str, calls: int, rounds: int) -> None:
    """Before/after in one run: processes of other trees (`PYTHONPATH=<src>`, comma-separated, oldest
    first, each optionally `label=src`) and of this one, alternated `rounds` times (each the best of two
    interleaved rounds); the best of all per variant."""
    import json
    import os
    import subprocess
    import sys

    trees: dict[str, str] = {}
    for n, item in enumerate(others.split(",")):
        label, _, src = item.rpartition("=")
        trees[label or ("before" if n == 0 else f"tree {n}")] = src
    trees["after"] = str(Path(__file__).resolve().parents[1] / "src")
    best: dict[str, dict[str, float]] = {t: {} for t in trees}
    for _ in range(rounds):
        for tree, src in trees.items():
            env = {**os.environ, "PYTHONPATH": src}
            cmd = [sys.executable, __file__, "--calls", str(calls), "--repeat", "2", "--json"]
            out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
            for name, v in json.loads(out)["best"].items():
                best[tree][name] = min(v, best[tree].get(name, v))
    print(f"reference: sum(range(100)) {reference(calls, 5):.2f} µs (how fast this machine is right now)")
    width = max(9, *(len(t) + 2 for t in trees))
    print(f"{'µs per call':26s}" + "".join(f"{t:>{width}s}" for t in trees))
    print(f"{'baseline walk':26s}" + "".join(f"{best[t]['baseline']:{width}.2f}" for t in trees))
    table = {t: added(best[t]) for t in trees}
    for name in table["after"]:
        print(f"{name + ' (added)':26s}" + "".join(f"{table[t][name]:{width}.2f}" for t in trees))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=5, help="best of N runs (a shared machine is noisy)")
    ap.add_argument("--profile", action="store_true", help="cProfile the all-on loop instead")
    ap.add_argument("--json", action="store_true", help="the figures as JSON (for --ab)")
    ap.add_argument(
        "--ab", metavar="SRC[,SRC…]", help="before/after: other trees' src/ (oldest first) against this one"
    )
    args = ap.parse_args()
    if args.profile:
        profile(args.calls)
        return
    if args.ab:
        ab(args.ab, args.calls, args.repeat)
        return
    best = measure(args.calls, args.repeat)
    ref = reference(args.calls, args.repeat)
    if args.json:
        import json

        print(json.dumps({"reference_us": ref, "best": best, "added": added(best)}))
        return
    add = added(best)
    print(f"reference: sum(range(100))               {ref:6.2f} µs  (how fast this machine is right now)")
    print(f"baseline walk (prepare, plan, 1 attempt): {best['baseline']:6.2f} µs/call")
    for name, label in LINES:
        print(f"{label + ':':42s}{add[name]:6.2f} µs/call added")
    print(f"{'  of which the key:':42s}{add['key']:6.2f} µs/call")
    print(f"{'all five on:':42s}{add['all five']:6.2f} µs/call added  (goal <= 20)")


if __name__ == "__main__":
    main()
