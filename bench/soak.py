"""Soak: minutes of mixed traffic through `modelpool serve` while the simulated fleet injects ~20 % faults.

    python bench/soak.py                         # 10 minutes, 6 clients, ~20 % faults
    python bench/soak.py --duration 20           # a quick check (what the CI smoke test runs)
    python bench/soak.py --json out.json --markdown

Traffic: every client sends one call after the other (a short pause between), each call in a dialect
taken in turn (OpenAI chat, Anthropic Messages, Responses), streamed or not at random, mostly to the
three-route pool `m1` and some to the aggregator's model; a client starts a new conversation every 20
calls. Every sim provider gets the same fault script (nine kinds, each with the same probability, so
that about `--fault-rate` of upstream calls fail: errors, resets, cuts, stalls before and after the
first token, malformed chunks, missing terminators, error events).

Judged per call (see harness/soak_calls.py): lost, duplicated, truncated and hung calls must be zero.
The gateway's RSS is sampled every few seconds; the growth after the warm-up is reported. The state is
SQLite in the run's temp dir, so its batched writes are soaked too.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from harness import procs
from harness.report import command_line, machine_info, machine_lines, md_table, now_utc, plain_table
from harness.run import guarded_run, interrupt_on_signals
from harness.soak_calls import DIALECTS, VERDICTS, Outcome, soak_call

AGG_MODEL = "deepseek/deepseek-v4.1-flash-1017"  # the bench fleet's aggregator model
SIM_TOKENS = 24  # content tokens of every sim reply (SimModel default)
FAILURES = ("lost", "hung", "duplicated", "truncated")


def fault_script(rate: float) -> list[dict[str, Any]]:
    kinds: list[dict[str, Any]] = [
        {"kind": "server_error", "status": 503},
        {"kind": "rate_limit", "retry_after": 0.2},
        {"kind": "reset"},
        {"kind": "cut", "after_tokens": 5},
        {"kind": "stall"},  # before the first byte, until the gateway gives up (first_byte timeout)
        {"kind": "stall", "after_tokens": 5, "headers": True},  # mid-stream (idle timeout)
        {"kind": "malformed", "after_tokens": 3},
        {"kind": "no_terminator"},
        {"kind": "error_event", "after_tokens": 4},
    ]
    # Independent draws in order: 1 - (1 - p)^k == rate.
    p = 1 - (1 - rate) ** (1 / len(kinds))
    return [{**k, "probability": round(p, 5)} for k in kinds]


def rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


async def client_loop(
    n: int, base_url: str, args: argparse.Namespace, stop_at: float, outcomes: list[Outcome]
) -> None:
    rng = random.Random(args.seed * 1000 + n)
    headers = {"content-type": "application/json", "authorization": f"Bearer {procs.CLIENT_KEY}"}
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        i = 0
        while time.monotonic() < stop_at:
            dialect = DIALECTS[(n + i) % len(DIALECTS)]
            model = AGG_MODEL if rng.random() < args.aggregator_share else "m1"
            call_headers = {**headers, "x-session-id": f"soak-{n}-{i // 20}"}
            outcomes.append(
                await soak_call(
                    session, base_url, dialect, model, rng.random() < 0.5, call_headers,
                    args.deadline, SIM_TOKENS,
                )
            )  # fmt: skip
            i += 1
            await asyncio.sleep(args.pause)


async def rss_sampler(
    pid: int, every: float, stop: asyncio.Event, samples: list[tuple[float, float]]
) -> None:
    t0 = time.monotonic()
    while not stop.is_set():
        value = rss_mib(pid)
        if value is not None:
            samples.append((round(time.monotonic() - t0, 1), round(value, 1)))
        try:
            await asyncio.wait_for(stop.wait(), every)
        except TimeoutError:
            pass


async def run_traffic(gateway: procs.Child, args: argparse.Namespace) -> dict[str, Any]:
    outcomes: list[Outcome] = []
    rss: list[tuple[float, float]] = []
    stop = asyncio.Event()
    sampler = asyncio.create_task(rss_sampler(gateway.pid, args.rss_every, stop, rss))
    start = time.monotonic()
    stop_at = start + args.duration
    clients = [client_loop(n, gateway.url, args, stop_at, outcomes) for n in range(args.clients)]
    progress = asyncio.create_task(_progress(outcomes, stop_at))
    await asyncio.gather(*clients)
    progress.cancel()
    stop.set()
    await sampler
    return {"outcomes": outcomes, "rss": rss, "wall": time.monotonic() - start}


async def _progress(outcomes: list[Outcome], stop_at: float) -> None:
    while True:
        await asyncio.sleep(30)
        tally = Counter(o.verdict for o in outcomes)
        left = max(0, stop_at - time.monotonic())
        print(f"  {len(outcomes)} calls, {dict(tally)}, {left:.0f}s left", flush=True)


def summarize(result: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    outcomes: list[Outcome] = result["outcomes"]
    verdicts = Counter(o.verdict for o in outcomes)
    by_kind: dict[str, Counter[str]] = {}
    for o in outcomes:
        by_kind.setdefault(f"{o.dialect}{':stream' if o.stream else ''}", Counter())[o.verdict] += 1
    rss = result["rss"]
    warm = args.warmup if args.warmup is not None else min(60.0, args.duration / 5)
    after = [v for t, v in rss if t >= warm] or [v for _, v in rss]
    rss_doc: dict[str, Any] = {"samples": rss, "warmup_s": warm}
    if after:
        growth = after[-1] - after[0]
        rss_doc.update(
            at_warmup_mib=after[0], final_mib=after[-1], max_mib=max(after), growth_mib=round(growth, 1),
            growth_pct=round(100 * growth / after[0], 1),
        )  # fmt: skip
        rss_doc["stable"] = rss_doc["growth_pct"] <= args.rss_tolerance
    problems = [
        {
            "verdict": o.verdict,
            "dialect": o.dialect,
            "stream": o.stream,
            "status": o.status,
            "detail": o.detail,
        }
        for o in outcomes
        if o.verdict in FAILURES
    ]
    return {
        "calls": len(outcomes),
        "wall_s": round(result["wall"], 1),
        "verdicts": {v: verdicts.get(v, 0) for v in VERDICTS},
        "by_kind": {k: dict(c) for k, c in sorted(by_kind.items())},
        "statuses": dict(Counter(str(o.status) for o in outcomes)),
        "error_details": dict(Counter(o.detail.split(":")[0][:60] for o in outcomes if o.verdict == "error")),
        "problems": problems[:20],
        "rss": rss_doc,
        # RSS growth beyond the tolerance fails the run too: "RSS stable" is one of the soak's goals.
        "passed": all(verdicts.get(v, 0) == 0 for v in FAILURES) and rss_doc.get("stable", True),
    }


def tables(doc: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    head = ["calls", *VERDICTS]
    rows = []
    for kind, counts in doc["summary"]["by_kind"].items():
        rows.append([kind, str(sum(counts.values())), *(str(counts.get(v, 0)) for v in VERDICTS)])
    s = doc["summary"]
    rows.append(["all", str(s["calls"]), *(str(s["verdicts"][v]) for v in VERDICTS)])
    return ["kind", *head], rows


def report(doc: dict[str, Any], markdown: bool) -> None:
    s = doc["summary"]
    head, rows = tables(doc)
    print(plain_table(head, rows))
    r = s["rss"]
    if "final_mib" in r:
        print(
            f"gateway RSS: {r['at_warmup_mib']} MiB after {r['warmup_s']:.0f}s warm-up → "
            f"{r['final_mib']} MiB at the end (max {r['max_mib']}; "
            f"growth {r['growth_mib']} MiB, {r['growth_pct']} %)"
        )
    u = s.get("upstream", {})
    print(f"upstream: {u.get('calls')} calls, {u.get('faulted')} faulted ({u.get('rate')}): {u.get('kinds')}")
    print(f"clear errors: {s['error_details']}")
    for p in s["problems"]:
        print(f"  PROBLEM {p}")
    print(
        f"gateway log errors: {doc.get('gateway_log_errors')}; verdict: {'PASS' if s['passed'] else 'FAIL'}"
    )
    if markdown:
        print()
        print("\n".join(markdown_lines(doc)))


def markdown_lines(doc: dict[str, Any]) -> list[str]:
    s = doc["summary"]
    r = s["rss"]
    st = doc["settings"]
    head, rows = tables(doc)
    lines = [
        f"### Soak — {doc['date']}",
        "",
        f"- command: `{doc['command']}`",
        *machine_lines(doc),
        f"- workload: {st['duration']:.0f} s, {st['clients']} clients, pause {st['pause']} s, "
        f"{int(st['fault_rate'] * 100)} % upstream faults (9 kinds), deadline {st['deadline']} s; "
        f"{s['calls']} calls in {s['wall_s']} s",
        "",
        md_table(head, rows),
        "",
    ]
    if "final_mib" in r:
        lines.append(
            f"- gateway RSS: {r['at_warmup_mib']} MiB after the {r['warmup_s']:.0f} s warm-up, "
            f"{r['final_mib']} MiB at the end, max {r['max_mib']} MiB: growth {r['growth_mib']} MiB "
            f"({r['growth_pct']} %)"
        )
    u = s.get("upstream", {})
    lines.append(
        f"- upstream: {u.get('calls')} calls, {u.get('faulted')} hit by a fault "
        f"(rate {u.get('rate')}): {u.get('kinds')}"
    )
    lines.append(f"- clear errors by cause: {s['error_details']}")
    lines.append(
        f"- gateway log errors: {doc.get('gateway_log_errors')}; verdict {'PASS' if s['passed'] else 'FAIL'}"
    )
    return lines


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=600.0, help="seconds of traffic (default 600)")
    ap.add_argument("--clients", type=int, default=6, help="concurrent clients (default 6)")
    ap.add_argument("--pause", type=float, default=0.05, help="seconds each client waits between calls")
    ap.add_argument("--fault-rate", type=float, default=0.2, help="share of upstream calls that fail")
    ap.add_argument("--aggregator-share", type=float, default=0.2, help="share of calls to the aggregator")
    ap.add_argument("--deadline", type=float, default=60.0, help="a call still open after this is hung")
    ap.add_argument("--rss-every", type=float, default=5.0, help="seconds between RSS samples")
    ap.add_argument("--warmup", type=float, default=None, help="seconds before RSS growth counts")
    ap.add_argument("--rss-tolerance", type=float, default=25.0, help="RSS growth %% still called stable")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", type=Path, help="write the full result document here")
    ap.add_argument("--markdown", action="store_true", help="also print a RESULTS.md block")
    ap.add_argument("--keep-logs", action="store_true")
    return ap.parse_args(argv)


def gateway_overrides(sim_config: dict[str, Any], workdir: Path) -> dict[str, Any]:
    return {
        "state": {"backend": "sqlite", "path": str(workdir / "state.db")},
        # Short timeouts: a stalled upstream is given up on in 2 s, so stalls cost little wall time. A
        # non-streamed answer silent before its headers is bounded by `response` only (the provider may be
        # generating it): max_attempts × response must stay well inside the client's deadline (60 s).
        "timeouts": {"connect": "2s", "first_byte": "2s", "idle": "2s", "response": "8s"},
        "pool": {"strategy": "round-robin", "sticky": True, "retry_backoff": "20ms", "cooldown": "2s"},
        "holidays": {"source": "bundled"},
    }


def upstream_faults(sim_config: dict[str, Any]) -> dict[str, Any]:
    """What the fleet really did: upstream calls and how many a fault hit (the measured fault rate)."""
    calls = faulted = 0
    kinds: Counter[str] = Counter()
    for p in sim_config["providers"]:
        root = procs.provider_root_url(sim_config, p["id"])
        for call in procs.http_json(f"{root}/_sim/calls", timeout=120)["calls"]:
            if not call["path"].endswith(("/chat/completions", "/messages", "/responses")):
                continue  # model lists and aggregator stats, not calls
            calls += 1
            if call["fault"] is not None:
                faulted += 1
                kinds[call["fault"]["kind"]] += 1
    return {
        "calls": calls,
        "faulted": faulted,
        "rate": round(faulted / calls, 3) if calls else 0.0,
        "kinds": dict(kinds),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    interrupt_on_signals()
    workdir = Path(tempfile.mkdtemp(prefix="modelpool-soak-"))
    children = procs.Children(workdir)
    settings = {
        k: getattr(args, k) for k in ("duration", "clients", "pause", "fault_rate", "deadline", "seed")
    }
    doc: dict[str, Any] = {"date": now_utc(), "command": command_line(), "machine": machine_info()}
    doc["settings"] = settings
    with guarded_run(children, workdir, args.keep_logs, "soak") as run:
        _sim, sim_config = procs.start_sim(children)
        overrides = gateway_overrides(sim_config, workdir)
        gateway = procs.start_gateway(children, sim_config, "round-robin", overrides=overrides)
        script = fault_script(args.fault_rate)
        for p in sim_config["providers"]:
            procs.set_sim_faults(procs.provider_root_url(sim_config, p["id"]), script)
        print(f"gateway pid {gateway.pid} at {gateway.url}; {args.duration:.0f}s of traffic", flush=True)
        result = asyncio.run(run_traffic(gateway, args))
        if not gateway.alive():
            raise RuntimeError(f"the gateway died during the soak:\n{gateway.log_tail()}")
        doc["summary"] = summarize(result, args)
        doc["summary"]["upstream"] = upstream_faults(sim_config)
        doc["gateway_log_errors"] = procs.log_errors(gateway)
        doc["summary"]["passed"] = doc["summary"]["passed"] and doc["gateway_log_errors"] == 0
        doc["machine"]["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    if run.code is not None:
        return run.code
    report(doc, args.markdown)
    if args.json:
        args.json.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    return 0 if doc["summary"]["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
