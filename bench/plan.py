"""Planning cost: `prepare` (pool, session, effort, size, …) + the planner (eligibility, base order,
strategy, demotions, health gate, sticky, cap, with every reason string) for one call over 22 routes.

    python bench/plan.py                       # every strategy, 5,000 calls × 5 repeats each (~1 min)
    python bench/plan.py --strategies priority --calls 2000 --repeats 2   # self-check

In-process, no network: a config of 22 OpenAI-compatible providers serving `m1` (the 22 of the demo's
aggregator, as direct routes), memory state, each route's health seeded with a few successes (different
TTFT and tok/s) so that the speed-based strategies have measurements to sort by. Reported: CPU µs per call,
median of the repeats (min in brackets), for prepare alone, plan alone, and both — the figure of the
goal. A plan with a sticky pin (the conversation's second call) is measured as well.

The planner keeps a deterministic strategy's ranking until the measurements change. `--after-result`
records one success (same figures as the seed) before each planned call, as in a busy gateway where results
arrive as often as calls, so that ranking is recomputed every time; the recording's own cost is measured
alone and subtracted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import orjson

from harness.goals import check, goals_table
from harness.report import command_line, machine_info, machine_lines, md_table, now_utc, plain_table

STRATEGIES = [
    "priority",
    "round-robin",
    "weighted-random",
    "least-used",
    "fastest",
    "cheapest",
    "throughput",
    "score",
]
N_ROUTES = 22


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--strategies", default=",".join(STRATEGIES), help="comma-separated")
    ap.add_argument("--calls", type=int, default=5000, help="calls per repeat")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--after-result", action="store_true", help="one recorded result before each plan")
    ap.add_argument(
        "--quota",
        action="store_true",
        help="every route announced room left of a rate limit (SPEC §3.8: the quota gate runs)",
    )
    ap.add_argument("--json", type=Path, help="write the full results here")
    ap.add_argument("--markdown", action="store_true", help="print a block ready for bench/RESULTS.md")
    return ap.parse_args(argv)


def config(strategy: str) -> dict[str, Any]:
    from modelpool.sim.presets import _DEMO_INNER

    providers = [
        {
            "id": name,
            "kind": "openai",
            "base_url": f"http://127.0.0.1:9/{name}/v1",  # never called
            "models": ["m1"],
            "cost": {"peak": 0.4 + i / 10, "off_peak": 0.1 + i / 10},
        }
        for i, (name, *_rest) in enumerate(_DEMO_INNER[:N_ROUTES])
    ]
    return {
        "providers": providers,
        "pool": {"strategy": strategy},
        "state": {"backend": "memory"},
        "server": {"admin_token": "bench-admin-token-0123456789"},
        "holidays": {"sync": False},
    }


def gateway(strategy: str, quota: bool = False) -> Any:
    from modelpool.gateway import Gateway
    from modelpool.walk.walker import AttemptResult

    gw = Gateway.from_config(config(strategy))
    if quota:  # what an OpenAI upstream announces on every reply: plenty left of both budgets
        from modelpool.health.quota_headers import Quota

        future = time.time() + 3600
        for key in gw.runtime.catalog.routes:
            gw.quota.update(
                key, Quota(requests=5000, requests_reset=future, tokens=800_000, tokens_reset=future)
            )
    keys = list(gw.runtime.catalog.routes)
    if len(keys) != N_ROUTES:
        raise RuntimeError(f"expected {N_ROUTES} routes, the catalog has {len(keys)}")
    for i, key in enumerate(keys):  # measurements for fastest/throughput/score
        for _ in range(3):
            gw.sink.success(key, AttemptResult(ttft=0.2 + i / 50, tokens_per_s=400 - 15 * i))
    return gw


BODY = orjson.loads(
    orjson.dumps(
        {
            "model": "m1",
            "messages": [
                {"role": "system", "content": "You are a helpful assistant. " * 20},
                {"role": "user", "content": "Summarise the following text in one sentence. " * 30},
            ],
        }
    )
)


# CPU time of this process, not wall time: planning is pure computation, and on a shared machine the
# wall clock also counts the time other processes held the CPU.
clock = time.process_time


HEADERS = {"authorization": "Bearer x"}
RAW = orjson.dumps(BODY)  # the server hands the planner the body's bytes too (the quota gate's bound)


def pin_conversation(gw: Any) -> None:
    """The conversation's second call: its route is pinned."""
    call = gw.prepare("openai", BODY, HEADERS, RAW)
    plan = gw.planner.plan(gw.runtime, call, time.time())
    gw.planner.pins.set(call.session_id, call.pool.id, plan.candidates[-1].key, 3600.0, now=time.time())


def recorder(gw: Any) -> Any:
    """One recorded success per call, each route in turn, with its seed figures (the order stays the same)."""
    from modelpool.walk.walker import AttemptResult

    keys = list(gw.runtime.catalog.routes)
    results = [AttemptResult(ttft=0.2 + i / 50, tokens_per_s=400 - 15 * i) for i in range(len(keys))]

    def record(i: int) -> None:
        gw.sink.success(keys[i % len(keys)], results[i % len(keys)])

    return record


def plan_shape(gw: Any) -> dict[str, int]:
    plan = gw.planner.plan(gw.runtime, gw.prepare("openai", BODY, HEADERS, RAW), time.time())
    return {
        "candidates": len(plan.candidates),
        "skipped": len(plan.skipped),
        "reasons": sum(len(c.reasons) for c in plan.candidates) + len(plan.skipped),
    }


def measure(gw: Any, calls: int, repeats: int, pinned: bool, after_result: bool = False) -> dict[str, float]:
    rt = gw.runtime
    planner = gw.planner
    if pinned:
        pin_conversation(gw)
    for _ in range(min(calls, 2000)):  # warm-up (caches, the memoised base order, the allocator): unmeasured
        planner.plan(rt, gw.prepare("openai", BODY, HEADERS, RAW), time.time())
    if after_result:
        return measure_after_result(gw, calls, repeats)
    prep, plan_us, both = [], [], []
    for _ in range(repeats):
        t0 = clock()
        for _ in range(calls):
            gw.prepare("openai", BODY, HEADERS, RAW)
        t1 = clock()
        call = gw.prepare("openai", BODY, HEADERS, RAW)
        now = time.time()
        t2 = clock()
        for _ in range(calls):
            planner.plan(rt, call, now)
        t3 = clock()
        for _ in range(calls):
            planner.plan(rt, gw.prepare("openai", BODY, HEADERS, RAW), time.time())
        t4 = clock()
        prep.append((t1 - t0) / calls * 1e6)
        plan_us.append((t3 - t2) / calls * 1e6)
        both.append((t4 - t3) / calls * 1e6)
    return {
        "prepare_us": statistics.median(prep),
        "plan_us": statistics.median(plan_us),
        "prepare_plan_us": statistics.median(both),
        "prepare_plan_min_us": min(both),
        **plan_shape(gw),
    }


def measure_after_result(gw: Any, calls: int, repeats: int) -> dict[str, float]:
    """prepare + plan with one recorded result before each call, minus the recording measured alone."""
    rt, planner, record = gw.runtime, gw.planner, recorder(gw)
    both = []
    for _ in range(repeats):
        t0 = clock()
        for i in range(calls):
            record(i)
            planner.plan(rt, gw.prepare("openai", BODY, HEADERS, RAW), time.time())
        t1 = clock()
        for i in range(calls):
            record(i)
        t2 = clock()
        both.append((t1 - t0 - (t2 - t1)) / calls * 1e6)
    nan = float("nan")  # prepare and plan alone: not measured in this mode
    return {
        "prepare_us": nan,
        "plan_us": nan,
        "prepare_plan_us": statistics.median(both),
        "prepare_plan_min_us": min(both),
        **plan_shape(gw),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    doc: dict[str, Any] = {"date": now_utc(), "command": command_line(), "machine": machine_info()}
    rows, results = [], {}
    for strategy in [s.strip() for s in args.strategies.split(",") if s.strip()]:
        gw = gateway(strategy, args.quota)
        for pinned in (False, True):
            r = measure(gw, args.calls, args.repeats, pinned, args.after_result)
            name = (
                strategy
                + (" (sticky pin)" if pinned else "")
                + (" after a result" if args.after_result else "")
                + (" with announced quota" if args.quota else "")
            )
            results[name] = r
            rows.append(
                [name, f"{r['prepare_us']:.1f}", f"{r['plan_us']:.1f}",
                 f"{r['prepare_plan_us']:.1f} ({r['prepare_plan_min_us']:.1f})",
                 f"{r['candidates']} + {r['skipped']} skipped", str(r["reasons"])]
            )  # fmt: skip
    worst_name = max(results, key=lambda k: results[k]["prepare_plan_us"])
    # With a result recorded before each call (a busy gateway) a kept ranking is recomputed every time.
    busy = ", a result before each" if args.after_result else ""
    goal = f"planning one call over {N_ROUTES} routes{busy}"
    rows_goal = [
        check(f"{goal}, slowest strategy", results[worst_name]["prepare_plan_us"], 50, " µs", note=worst_name)
    ]
    if "priority" in results:  # the default strategy
        rows_goal.insert(
            0,
            check(
                f"{goal}, default strategy",
                results["priority"]["prepare_plan_us"],
                50,
                " µs",
                note="priority",
            ),
        )
    doc.update(results=results, goals=[g.to_dict() for g in rows_goal])
    head = ["strategy", "prepare µs", "plan µs", "prepare+plan µs (min)", "candidates", "reasons"]
    print(plain_table(head, rows) + "\n\n" + goals_table(rows_goal))
    if args.json:
        args.json.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
        print(f"\nJSON written to {args.json}")
    if args.markdown:
        lines = [f"### plan — {doc['date']}", "", f"- command: `{doc['command']}`", *machine_lines(doc), ""]
        print("\n".join(lines) + "\n" + md_table(head, rows) + "\n\n" + goals_table(rows_goal, md=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
