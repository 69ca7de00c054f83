"""The gateway's memory: RSS with many streams held open at once, and RSS growth over a soak.

    python bench/memory.py                          # 1,000 concurrent open streams held 10 s (~40 s)
    python bench/memory.py --duration 600           # … then a 10-minute soak at 32 workers
    python bench/memory.py --streams 100 --hold 2 --duration 20 --soak-warmup 5   # self-check (~30 s)

Open streams: `--streams` calls to the sim's `slow` model (2 tokens/s, 600 tokens: a stream stays open
for minutes), each read until its first answer token (the gateway has committed to relaying it) and then
kept open; the gateway's RSS (its whole process group, from /proc) is sampled while they are all open.

Soak (on a freshly started gateway): `--soak-concurrency` closed-loop workers, half non-stream and half
stream calls of `m1`, for
`--soak-warmup` seconds (unmeasured: pools, caches and allocator arenas grow to their working size) and
then `--duration` seconds; growth = mean RSS of the last 10 samples ÷ mean of the last 10 samples of the
warm-up − 1. bench/soak.py (issue #10) is the fault-injecting soak; this one only watches memory.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from harness import procs
from harness.goals import Goal, check, goals_table
from harness.load import Target, _has_token, closed_block, make_body, new_session, one_call
from harness.report import command_line, machine_info, machine_lines, md_table, now_utc, plain_table
from harness.run import guarded_run

SLOW_MODEL = "slow"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--streams", type=int, default=1000, help="concurrent open streams")
    ap.add_argument("--hold", type=float, default=10.0, help="seconds to hold them open, sampling RSS")
    ap.add_argument("--duration", type=float, default=0.0, help="soak seconds after warm-up (0: no soak)")
    ap.add_argument("--soak-warmup", type=float, default=60.0, help="unmeasured soak seconds first")
    ap.add_argument("--soak-concurrency", type=int, default=32, help="soak workers (half of them stream)")
    ap.add_argument("--interval", type=float, default=1.0, help="seconds between RSS samples")
    ap.add_argument("--json", type=Path, help="write the full results here")
    ap.add_argument("--markdown", action="store_true", help="print a block ready for bench/RESULTS.md")
    ap.add_argument("--keep-logs", action="store_true", help="keep the children's logs and configs")
    return ap.parse_args(argv)


# ---- open streams --------------------------------------------------------------------------------------


async def hold_stream(
    session: aiohttp.ClientSession, url: str, body: bytes, opened: asyncio.Queue[bool]
) -> None:
    """One stream: report when its first answer token arrived, then keep reading until cancelled."""
    try:
        async with session.post(url, data=body) as resp:
            if resp.status != 200:
                await opened.put(False)
                return
            pending = b""
            first = True
            async for chunk in resp.content.iter_any():
                if first:
                    pending += chunk
                    events = pending.split(b"\n\n")
                    if any(_has_token(ev) for ev in events[:-1]):
                        first = False
                        await opened.put(True)
            if first:
                await opened.put(False)
    except (aiohttp.ClientError, TimeoutError):
        await opened.put(False)


async def open_streams(gateway: procs.Child, args: argparse.Namespace) -> dict[str, Any]:
    url = f"{gateway.url}/v1/chat/completions"
    body = make_body(SLOW_MODEL, True)
    opened: asyncio.Queue[bool] = asyncio.Queue()
    # A generous total timeout: the streams are meant to stay open for the whole hold.
    async with new_session(args.streams, 600.0) as session:
        rss_before = gateway.rss_mb()
        cpu0 = gateway.cpu_seconds()
        t0 = time.monotonic()
        tasks = [asyncio.create_task(hold_stream(session, url, body, opened)) for _ in range(args.streams)]
        ok = failed = 0
        try:
            async with asyncio.timeout(120):
                while ok + failed < args.streams:
                    if await opened.get():
                        ok += 1
                    else:
                        failed += 1
        except TimeoutError:
            pass
        ramp = time.monotonic() - t0
        samples = []
        deadline = time.monotonic() + args.hold
        while time.monotonic() < deadline:
            if (mb := gateway.rss_mb()) is not None:
                samples.append(mb)
            await asyncio.sleep(args.interval / 2)
        still_open = sum(not t.done() for t in tasks)
        cpu_hold = gateway.cpu_seconds() - cpu0
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.sleep(2.0)  # the gateway notices the hang-ups and closes the upstream streams
    rss_after = gateway.rss_mb()
    return {
        "streams": args.streams,
        "opened": ok,
        "failed": failed,
        "seconds_to_open": round(ramp, 2),
        "still_open_at_end": still_open,
        "rss_mb_before": rss_before,
        "rss_mb_peak": max(samples) if samples else None,
        "rss_mb_median": statistics.median(samples) if samples else None,
        "rss_mb_after_close": rss_after,
        "gateway_cpu_s": round(cpu_hold, 2),
    }


# ---- soak ----------------------------------------------------------------------------------------------


async def soak(gateway: procs.Child, args: argparse.Namespace) -> dict[str, Any]:
    target = Target("modelpool", f"{gateway.url}/v1/chat/completions", gateway)
    bodies = {False: make_body("m1", False), True: make_body("m1", True)}
    series: list[tuple[float, float]] = []
    calls = errors = 0
    stop = asyncio.Event()
    half = max(1, args.soak_concurrency // 2)

    async def load(stream: bool, workers: int) -> None:
        nonlocal calls, errors
        while not stop.is_set():
            samples, _ = await closed_block(session, target, bodies[stream], workers * 20, workers, stream)
            calls += len(samples)
            errors += sum(not s.ok for s in samples)

    async with new_session(args.soak_concurrency, 60.0) as session:
        t0 = time.monotonic()
        loads = [asyncio.create_task(load(False, half)), asyncio.create_task(load(True, half))]
        end = t0 + args.soak_warmup + args.duration
        while time.monotonic() < end:
            await asyncio.sleep(args.interval)
            if (mb := gateway.rss_mb()) is not None:
                series.append((round(time.monotonic() - t0, 1), mb))
        stop.set()
        await asyncio.gather(*loads)
    warm = [mb for t, mb in series if t <= args.soak_warmup][-10:]
    last = [mb for _, mb in series][-10:]
    base = statistics.mean(warm) if warm else None
    final = statistics.mean(last) if last else None
    growth = (final / base - 1) * 100 if base and final else None
    return {
        "warmup_s": args.soak_warmup,
        "duration_s": args.duration,
        "concurrency": args.soak_concurrency,
        "calls": calls,
        "errors": errors,
        "rss_mb_after_warmup": base,
        "rss_mb_end": final,
        "rss_mb_peak": max((mb for _, mb in series), default=None),
        "growth_pct": growth,
        "series": series,
    }


# ---- orchestration -------------------------------------------------------------------------------------


async def warm(gateway: procs.Child) -> None:
    """Code paths, the upstream pool and the allocator warm before anything is measured."""
    target = Target("modelpool", f"{gateway.url}/v1/chat/completions", gateway)
    async with new_session(32, 30.0) as session:
        for stream in (False, True):
            s = await one_call(session, target, make_body("m1", stream), stream, time.perf_counter())
            if not s.ok:
                raise RuntimeError(f"gateway check failed: {s.error}")
            await closed_block(session, target, make_body("m1", stream), 400, 16, stream)


async def run_streams(gateway: procs.Child, args: argparse.Namespace) -> dict[str, Any]:
    await warm(gateway)
    out: dict[str, Any] = {"rss_mb_idle_after_warmup": gateway.rss_mb()}
    print(f"holding {args.streams} streams open for {args.hold:g}s …", flush=True)
    out["open_streams"] = await open_streams(gateway, args)
    return out


async def run_soak(gateway: procs.Child, args: argparse.Namespace) -> dict[str, Any]:
    await warm(gateway)
    print(f"soak: {args.soak_warmup:g}s warm-up + {args.duration:g}s at {args.soak_concurrency} workers …")
    return await soak(gateway, args)


def goals(res: dict[str, Any], streams: int) -> list[Goal]:
    held = res["open_streams"]
    note = f"{held['opened']}/{streams} opened, {held['still_open_at_end']} open at the end"
    rows = [
        check(f"RSS with {streams:,} concurrent open streams", held["rss_mb_peak"], 150, " MB", note=note)
    ]
    if held["opened"] < streams:
        rows[0].met = False
    if "soak" in res:
        s = res["soak"]
        note = f"{s['duration_s']:g}s after {s['warmup_s']:g}s warm-up"
        note += f", {s['calls']:,} calls, {s['errors']} errors"
        rows.append(check("RSS growth over the soak", s["growth_pct"], 5, " %", note=note))
    return rows


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    workdir = Path(tempfile.mkdtemp(prefix="modelpool-bench-"))
    children = procs.Children(workdir)
    doc: dict[str, Any] = {"date": now_utc(), "command": command_line(), "machine": machine_info()}
    with guarded_run(children, workdir, args.keep_logs) as run:
        sim, sim_config = procs.start_sim(children)
        gateway = procs.start_gateway(children, sim_config, "priority", providers=["alpha", "beta"])
        print(f"sim fleet pid {sim.pid}; gateway pid {gateway.pid} at {gateway.url}")
        doc["rss_mb_at_ready"] = gateway.rss_mb()
        doc["results"] = _run_loop(run_streams(gateway, args))
        doc["gateway_log_errors"] = procs.log_errors(gateway)
        if args.duration > 0:
            # A fresh gateway: the soak's baseline must not inherit the open-streams phase's peak.
            gateway.stop()
            gateway = procs.start_gateway(children, sim_config, "priority", providers=["alpha", "beta"])
            doc["results"]["soak"] = _run_loop(run_soak(gateway, args))
            doc["gateway_log_errors"] += procs.log_errors(gateway)
        doc["machine"]["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    if run.code is not None:
        return run.code
    rows = goals(doc["results"], args.streams)
    doc["goals"] = [g.to_dict() for g in rows]
    _print(doc, args, rows)
    return 0


def _run_loop(coro: Any) -> Any:
    try:
        import uvloop

        return uvloop.run(coro)
    except ImportError:  # pragma: no cover
        return asyncio.run(coro)


def _table(doc: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    r = doc["results"]
    h = r["open_streams"]
    f = lambda x: "-" if x is None else f"{x:.1f}"  # noqa: E731
    rows = [
        ["gateway RSS at ready (MB)", f(doc.get("rss_mb_at_ready"))],
        ["… after warm-up, idle", f(r["rss_mb_idle_after_warmup"])],
        [
            f"… with {h['opened']} streams open: peak / median",
            f"{f(h['rss_mb_peak'])} / {f(h['rss_mb_median'])}",
        ],
        ["… 2 s after they closed", f(h["rss_mb_after_close"])],
        ["seconds to open them all", f"{h['seconds_to_open']:.2f}"],
    ]
    if "soak" in r:
        s = r["soak"]
        rows += [
            [f"soak: RSS after {s['warmup_s']:g}s warm-up / at end / peak (MB)",
             f"{f(s['rss_mb_after_warmup'])} / {f(s['rss_mb_end'])} / {f(s['rss_mb_peak'])}"],
            ["soak: growth (%)", "-" if s["growth_pct"] is None else f"{s['growth_pct']:+.2f}"],
            ["soak: calls / errors", f"{s['calls']:,} / {s['errors']}"],
        ]  # fmt: skip
    return ["measure", "value"], rows


def _print(doc: dict[str, Any], args: argparse.Namespace, rows: list[Goal]) -> None:
    head, table = _table(doc)
    print("\n" + plain_table(head, table))
    print("\n" + goals_table(rows))
    if doc.get("gateway_log_errors"):
        print(f"\nwarning: the gateway logged {doc['gateway_log_errors']} error(s) during the run")
    if args.json:
        args.json.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
        print(f"\nJSON written to {args.json}")
    if args.markdown:
        lines = [f"### memory — {doc['date']}", "", f"- command: `{doc['command']}`", *machine_lines(doc), ""]
        print("\n".join(lines) + "\n" + md_table(head, table) + "\n\n" + goals_table(rows, md=True))


if __name__ == "__main__":
    sys.exit(main())
