"""Issue #21, "stay flat as the catalog grows": every catalog-scale goal against one catalog in one run.

    python bench/scale.py                      # 3 start-ups, 3 reloads, plan cost (~2 min)
    python bench/scale.py --runs 1 --baseline 300 --reloads 2 --repeats 5   # self-check (~1 min)
    python bench/scale.py --json out.json --markdown

The catalog: `modelpool sim --preset scale` (sim/scale.py), 50 providers × 200 models = 10,000 routes in
400 natural pools of 3 to 30 routes, with the gateway config the sim writes (every provider lists its
models; one `model_info` glob per provider). Measured:

1. `modelpool serve` spawn → first `/readyz` 200 (bench/startup.py's timer, bytecode caches warm),
   median of `--runs` (one unmeasured run first);
2. `GET /v1/models` wall time from a keep-alive client, median of `--models-gets` (every body checked:
   400 pools, 10,000 routes);
3. config reload through the file watcher: the file is rewritten (temp file + rename, as editors do)
   with one model added to / removed from a provider, `--reloads` times; *applies* = the write → the
   first `/readyz` reporting the new pool count (polled every 10 ms). Sequential calls to the 30-route
   pool run throughout; every call overlapping [write, applied + 0.2 s] is compared with 2 × the p99 of
   `--baseline` sequential calls made just before (same poller running); the slowest call of the 0.3 s
   before each write (no reload running) is shown beside it, the machine's own noise in the same run;
4. planning CPU per call in-process (harness/scale_plan.py): the 3-route pool in the 10,000-route
   catalog ÷ in a catalog of just its 3 providers, and the 30-route pool ÷ a 30-route catalog;
5. the gateway's RSS (process group, /proc) after start, after the /v1/models GETs and after the reloads:
   the largest.

`--probe` runs the gateway with a loop-lateness probe inside it (harness/probed_serve.py): per reload, the
gateway's own event loop's longest lateness and its collections over 1 ms in the same window, so a slow
call can be told from a blocked loop (the machine's other work delays calls too).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml

import startup
from harness import procs, scale_plan
from harness.goals import Goal, check, goals_table
from harness.load import Target, make_body, new_session, one_call
from harness.report import command_line, machine_info, machine_lines, md_table, now_utc, plain_table
from harness.stats import percentile

SMALL, LARGEST = "scale-000", "scale-001"  # sim/scale.py: the 3-route pool and a 30-route one
ADDED = "scale-new"  # the model a reload adds to the first provider (a new pool)
BEFORE = 0.3  # s of calls before each reload's write: the control window
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3, help="serve start-ups (median)")
    ap.add_argument("--models-gets", type=int, default=30, help="GET /v1/models calls")
    ap.add_argument("--baseline", type=int, default=1000, help="sequential calls before the reloads")
    ap.add_argument("--reloads", type=int, default=3, help="config reloads (add, remove, add, …)")
    ap.add_argument("--strategy", default="fastest", help="pool strategy (the schema's default: fastest)")
    ap.add_argument("--calls", type=int, default=500, help="plans per repeat (plan cost)")
    # Many short repeats, alternated: a burst of machine noise spoils a few of them, not the median.
    ap.add_argument("--repeats", type=int, default=41, help="plan-cost repeats per catalog (median)")
    ap.add_argument(
        "--gateway-src",
        help="PYTHONPATH of the measured gateways only (A/B: another tree's `src`; the sim and the "
        "in-process plan cost stay on this one, and the plan cost is skipped)",
    )
    ap.add_argument("--probe", action="store_true", help="a loop-lateness probe in the gateway (see above)")
    ap.add_argument("--json", type=Path, help="write the full results here")
    ap.add_argument("--markdown", action="store_true", help="print a block ready for bench/RESULTS.md")
    return ap.parse_args(argv)


def render(config: dict[str, Any]) -> str:
    return yaml.dump(config, Dumper=_Dumper, sort_keys=False)


def write_config(path: Path, text: str) -> None:
    """Temp file + rename: the watcher sees one complete new file, like an editor's save. The text is
    rendered beforehand: dumping 10,000 routes takes ~0.2 s, which would stall the measuring client."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def with_added(config: dict[str, Any], add: bool) -> dict[str, Any]:
    first = dict(config["providers"][0])
    first["models"] = [*first["models"], ADDED] if add else [m for m in first["models"] if m != ADDED]
    return {**config, "providers": [first, *config["providers"][1:]]}


# ---- the live gateway --------------------------------------------------------------------------------


async def get_models(session: aiohttp.ClientSession, url: str, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        async with session.get(f"{url}/v1/models") as resp:
            body = await resp.read()
        out.append(time.perf_counter() - t0)
        data = orjson.loads(body)["data"]
        routes = sum(len(m["routes"]) for m in data)
        if resp.status != 200 or len(data) < 400 or routes < 10_000:
            raise RuntimeError(f"/v1/models: {resp.status}, {len(data)} pools, {routes} routes")
    return out


async def pools_now(session: aiohttp.ClientSession, url: str) -> int:
    async with session.get(f"{url}/readyz") as resp:
        return int((await resp.json())["pools"])


async def sequential(
    session: aiohttp.ClientSession, target: Target, body: bytes, stop: asyncio.Event, n: int | None = None
) -> list[tuple[float, float, bool]]:
    """(start, end, ok) of back-to-back calls until `stop` is set (or `n` calls)."""
    out: list[tuple[float, float, bool]] = []
    while not stop.is_set() and (n is None or len(out) < n):
        t0 = time.perf_counter()
        s = await one_call(session, target, body, False, t0)
        out.append((t0, t0 + s.total, s.ok))
    return out


async def poll(
    session: aiohttp.ClientSession, url: str, stop: asyncio.Event, expect: int | None = None
) -> float:
    """`/readyz` every 10 ms (a steady background load, the same in the baseline); returns when the pool
    count reaches `expect` (or `stop` is set): the time it did."""
    while not stop.is_set():
        if expect is not None and await pools_now(session, url) == expect:
            return time.perf_counter()
        if expect is None:
            await pools_now(session, url)
        await asyncio.sleep(0.01)
    return float("nan")


async def live(gw: procs.Child, config_path: Path, config: dict[str, Any], args: argparse.Namespace) -> dict:
    target = Target("modelpool", f"{gw.url}/v1/chat/completions", gw)
    body = make_body(LARGEST, False)
    doc: dict[str, Any] = {"rss_mb": [gw.rss_mb()]}
    async with new_session(4, 30) as session, new_session(1, 30) as poller:
        await get_models(session, gw.url, 3)  # warm-up (and the body is checked)
        doc["models_s"] = await get_models(session, gw.url, args.models_gets)
        doc["rss_mb"].append(gw.rss_mb())
        stop = asyncio.Event()
        await sequential(session, target, body, stop, 100)  # warm-up
        bg = asyncio.create_task(poll(poller, gw.url, stop))
        base = await sequential(session, target, body, stop, args.baseline)
        stop.set()
        await bg
        doc["baseline_ms"] = sorted((e - s) * 1000 for s, e, _ in base)
        doc["baseline_errors"] = sum(not ok for *_, ok in base)
        doc["reloads"] = [
            await reload_once(session, poller, gw, target, body, config_path, config, i)
            for i in range(args.reloads)
        ]
        doc["rss_mb"].append(gw.rss_mb())
    return doc


async def reload_once(
    session: aiohttp.ClientSession,
    poller: aiohttp.ClientSession,
    gw: procs.Child,
    target: Target,
    body: bytes,
    config_path: Path,
    config: dict[str, Any],
    i: int,
) -> dict[str, Any]:
    add = i % 2 == 0
    expect = await pools_now(poller, gw.url) + (1 if add else -1)
    new = render(with_added(config, add))
    stop = asyncio.Event()
    calls = asyncio.create_task(sequential(session, target, body, stop))
    await asyncio.sleep(BEFORE)
    t_write = time.perf_counter()
    write_config(config_path, new)
    applied = await asyncio.wait_for(poll(poller, gw.url, asyncio.Event(), expect), 30)
    await asyncio.sleep(0.3)
    stop.set()
    samples = await calls
    during = [(e - s) * 1000 for s, e, _ in samples if e >= t_write and s <= applied + 0.2]
    # The control: the same calls in the 0.3 s before the write, no reload running (a noisy machine
    # slows some calls with or without one).
    before = [(e - s) * 1000 for s, e, _ in samples if s >= t_write - BEFORE and e < t_write]
    return {
        "change": f"{'add' if add else 'remove'} {ADDED}",
        "window": [t_write, applied + 0.2],
        "applied_s": applied - t_write,
        "calls_during": len(during),
        "max_ms": max(during, default=float("nan")),
        "calls_before": len(before),
        "max_before_ms": max(before, default=float("nan")),
        "errors": sum(not ok for *_, ok in samples),
    }


def add_probe(live_doc: dict[str, Any], gw: procs.Child, out: Path) -> None:
    """The gateway's loop lateness and collections inside each reload's window (harness/probed_serve.py)."""
    os.kill(gw.pid, signal.SIGUSR1)
    procs.wait_until("the probe's dump", gw, out.exists, 10)
    probe = orjson.loads(out.read_bytes())
    lags, gcs = probe["lags"], probe["gcs"]
    for r in live_doc["reloads"]:
        start, end = r["window"]
        r["loop_lag_max_ms"] = max((lag * 1000 for t, lag, _ in lags if start <= t <= end), default=0.0)
        r["loop_lag_max_before_ms"] = max(
            (lag * 1000 for t, lag, _ in lags if start - BEFORE <= t < start), default=0.0
        )
        r["gc_over_1ms"] = [[g, round(s * 1000, 1)] for t, g, s in gcs if start <= t <= end and s > 0.001]
    live_doc["probe_lags_over_5ms"] = [
        [round(t, 3), round(lag * 1000, 1)] for t, lag, _ in lags if lag > 0.005
    ]
    live_doc["probe"] = probe  # everything, for a closer look (with a paced tree: its slices over 1 ms)


# ---- the run -------------------------------------------------------------------------------------------


def goals(doc: dict[str, Any]) -> list[Goal]:
    p99 = percentile(doc["live"]["baseline_ms"], 99)
    reloads = doc["live"]["reloads"]
    worst = max(r["max_ms"] for r in reloads)
    apply_s = statistics.median(r["applied_s"] for r in reloads)
    models_ms = statistics.median(doc["live"]["models_s"]) * 1000
    ready_s = doc["serve_ready"]["median_ms"] / 1000
    per_reload = " / ".join(f"{r['max_ms']:.1f}" for r in reloads)
    rows = [
        check("`modelpool serve` ready, 10,000 routes (median)", ready_s, 2, " s"),
        check("`GET /v1/models`, 400 pools / 10,000 routes (median)", models_ms, 50, " ms"),
        check(
            "config reload applies (median)",
            apply_s,
            1,
            " s",
            note=" / ".join(f"{r['applied_s']:.2f}" for r in reloads),
        ),
        check(
            "slowest call while a reload applies",
            worst,
            round(2 * p99, 1),
            " ms",
            note=f"2 × sequential p99 {p99:.2f} ms; per reload {per_reload}",
        ),
    ]
    for r in doc["plan"]:
        lo, hi = 0.9, 1.1
        what = (
            f"planning a {r['routes']}-route pool ({r['strategy']}): "
            f"10,000-route catalog ÷ {r['small_catalog_routes']}-route"
        )
        note = f"{r['large_us']:.1f} vs {r['small_us']:.1f} µs/call"
        rows.append(Goal(what, f"{lo:g}–{hi:g}×", f"{r['ratio']:.2f}×", lo <= r["ratio"] <= hi, note))
    peak = max(x for x in doc["live"]["rss_mb"] if x)
    rows.append(check("gateway RSS, 10,000 routes (peak)", peak, 200, " MB"))
    return rows


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="modelpool-scale-"))
    children = procs.Children(workdir)
    doc: dict[str, Any] = {"date": now_utc(), "command": command_line(), "machine": machine_info()}
    try:
        _, sim_config = procs.start_sim(children, "scale")
        config = procs.gateway_config(sim_config, args.strategy)
        config_path = workdir / "scale.yaml"
        write_config(config_path, render(config))
        env = {"PYTHONPATH": args.gateway_src} if args.gateway_src else {}
        saved = os.environ.copy()
        os.environ.update(env)  # startup.time_serve passes this environment on
        try:
            doc["serve_ready"] = startup.summary(startup.time_serve(config_path, workdir, args.runs))
        finally:
            os.environ.clear()
            os.environ.update(saved)
        probe_out = workdir / "probe.json"
        head = [sys.executable, str(Path(__file__).parent / "harness" / "probed_serve.py")]
        gw = procs.start_gateway(
            children,
            sim_config,
            args.strategy,
            name="gateway",
            env={**env, "PROBE_OUT": str(probe_out)} if args.probe else env,
            head=head if args.probe else None,
        )
        doc["gateway_src"] = args.gateway_src or "this tree"
        gw_config_path = workdir / "gateway.yaml"
        doc["live"] = asyncio.run(live(gw, gw_config_path, config, args))
        if args.probe:
            add_probe(doc["live"], gw, probe_out)
        if not gw.alive():
            raise RuntimeError(f"the gateway died:\n{gw.log_tail()}")
        doc["plan"] = (
            []
            if args.gateway_src
            else scale_plan.measure(config, [SMALL, LARGEST], args.strategy, args.calls, args.repeats)
        )
    except (RuntimeError, TimeoutError, OSError) as err:
        print(f"benchmark failed: {err}", file=sys.stderr)
        return 1
    finally:
        children.stop_all()
        shutil.rmtree(workdir, ignore_errors=True)
    doc["machine"]["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    rows = goals(doc)
    doc["goals"] = [g.to_dict() for g in rows]
    report(doc, rows, args)
    return 0


def report(doc: dict[str, Any], rows: list[Goal], args: argparse.Namespace) -> None:
    live_doc = doc["live"]
    head = ["reload", "applied s", "calls during", "slowest ms", "slowest in the 0.3 s before", "errors"]
    table = [
        [
            r["change"],
            f"{r['applied_s']:.2f}",
            str(r["calls_during"]),
            f"{r['max_ms']:.1f}",
            f"{r['max_before_ms']:.1f} ({r['calls_before']} calls)",
            str(r["errors"]),
        ]
        for r in live_doc["reloads"]
    ]
    if args.probe:  # the gateway's own loop in the same windows
        head += ["loop lag max ms (before)", "collections > 1 ms (gen:ms)"]
        for row, r in zip(table, live_doc["reloads"], strict=True):
            collections = " ".join(f"g{g}:{ms}" for g, ms in r["gc_over_1ms"]) or "-"
            row += [f"{r['loop_lag_max_ms']:.1f} ({r['loop_lag_max_before_ms']:.1f})", collections]
    base = live_doc["baseline_ms"]
    summary = (
        f"sequential baseline ({len(base)} calls to {LARGEST}): p50 {percentile(base, 50):.2f} ms, "
        f"p99 {percentile(base, 99):.2f} ms, max {max(base):.2f} ms, errors {live_doc['baseline_errors']}\n"
        f"serve ready: {doc['serve_ready']['median_ms']:.0f} ms median "
        f"(min {doc['serve_ready']['min_ms']:.0f}, max {doc['serve_ready']['max_ms']:.0f})\n"
        f"/v1/models: {statistics.median(live_doc['models_s']) * 1000:.1f} ms median, "
        f"max {max(live_doc['models_s']) * 1000:.1f} ms; RSS MB {live_doc['rss_mb']}"
    )
    print(summary + "\n\n" + plain_table(head, table) + "\n\n" + goals_table(rows))
    if args.json:
        args.json.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
        print(f"\nJSON written to {args.json}")
    if args.markdown:
        lines = [f"### scale — {doc['date']}", "", f"- command: `{doc['command']}`", *machine_lines(doc), ""]
        print("\n".join(lines) + "\n" + md_table(head, table) + "\n\n" + goals_table(rows, md=True))


if __name__ == "__main__":
    sys.exit(main())
