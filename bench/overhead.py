"""What the gateway adds to a call: the same workload against the upstream directly and through modelpool
(and, optionally, LiteLLM's proxy), in one run, on loopback, with targets alternated block by block.

    python bench/overhead.py                               # sequential, non-stream and stream
    python bench/overhead.py --scenarios c32 --concurrency 256 --stream
    python bench/overhead.py --rate 300                    # open loop at 300 calls/s
    python bench/overhead.py --litellm-cmd /tmp/litellm-venv/bin/litellm --json out.json --markdown

Scenarios (`--scenarios`, comma-separated): `seq` = one call at a time, `cN` = N concurrent workers
(closed loop), `rR` = R calls/s on a fixed schedule (open loop); `:stream` streams; `:anthropic` /
`:responses` = that client dialect on a route that speaks it (native relay), `:anthropic-x` /
`:responses-x` = that client on a chat-only route (translated). See bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from harness import procs
from harness.goals import GOAL_SCENARIOS, goals_table, overhead_goals
from harness.goals21 import SCENARIOS as ISSUE21_SCENARIOS
from harness.goals21 import issue21_goals
from harness.goals29 import SCENARIOS as ISSUE29_SCENARIOS
from harness.goals29 import issue29_goals
from harness.load import (
    Sample,
    Target,
    closed_block,
    gemini_path,
    make_body,
    new_session,
    one_call,
    open_block,
)
from harness.report import command_line, machine_info, markdown_block, now_utc, scenario_table
from harness.run import guarded_run, interrupt_on_signals
from harness.stats import Summary, Tally, comparisons, deltas

# The API path of each client dialect, below `/v1` (the gateway's and the sim's alike).
PATHS = {"openai": "/chat/completions", "anthropic": "/messages", "responses": "/responses"}
DIALECT_FLAGS = {"anthropic": ("anthropic", False), "responses": ("responses", False),
                 "gemini": ("gemini", False),
                 "anthropic-x": ("anthropic", True), "responses-x": ("responses", True)}  # fmt: skip
_NAMES = {"anthropic": "Anthropic Messages", "responses": "OpenAI Responses", "gemini": "Gemini API"}

STRATEGIES = [
    "priority", "round-robin", "weighted-random", "least-used", "fastest", "cheapest", "throughput", "score"
]  # fmt: skip


@dataclass(frozen=True)
class Scenario:
    name: str
    stream: bool
    concurrency: int = 1  # closed loop; ignored when rate is set
    rate: float | None = None  # open loop, calls per second
    dialect: str = "openai"  # the client's dialect: openai | anthropic | responses
    model: str | None = None  # None: --model
    translated: bool = False  # the gateway's routes speak Chat Completions only (the `-x` flags)

    @classmethod
    def parse(cls, text: str) -> Scenario:
        """`LOAD[:stream][:DIALECT][@MODEL]`, LOAD = seq | cN | rR, DIALECT = anthropic | responses (native
        relay) | anthropic-x | responses-x (translated onto a chat-only route)."""
        spec, _, model = text.strip().partition("@")
        load, *flags = spec.split(":")
        dialect_flags = [f for f in flags if f in DIALECT_FLAGS]
        if (
            any(f != "stream" and f not in DIALECT_FLAGS for f in flags)
            or len(set(flags)) != len(flags)
            or len(dialect_flags) > 1
        ):
            raise ValueError(
                f"scenario {text!r}: only ':stream' and one of ':anthropic', ':responses', "
                "':anthropic-x', ':responses-x' may follow the load"
            )
        dialect, translated = DIALECT_FLAGS[dialect_flags[0]] if dialect_flags else ("openai", False)
        kw: dict[str, Any] = {
            "stream": "stream" in flags,
            "dialect": dialect,
            "translated": translated,
            "model": model or None,
        }
        if load == "seq":
            return cls(text, **kw)
        if load[:1] == "c" and load[1:].isdigit() and int(load[1:]) >= 1:
            return cls(text, concurrency=int(load[1:]), **kw)
        if load[:1] == "r":
            try:
                rate = float(load[1:])
            except ValueError:
                rate = 0.0
            if rate > 0:
                return cls(text, rate=rate, **kw)
        raise ValueError(
            f"scenario {text!r}: use seq, cN (N workers) or rR (R calls/s), optionally ':stream', "
            "':anthropic' / ':responses' (native), ':anthropic-x' / ':responses-x' (translated), '@MODEL'"
        )

    def describe(self) -> str:
        load = f"open loop {self.rate:g}/s" if self.rate else f"concurrency {self.concurrency}"
        text = f"{self.name}: {load}, {'stream' if self.stream else 'non-stream'}"
        if self.dialect != "openai" and self.translated:
            text += (
                f", {_NAMES[self.dialect]} client → chat-only route (translated; direct = the OpenAI call)"
            )
        elif self.dialect != "openai":
            text += (
                f", {_NAMES[self.dialect]} client → a route that speaks it (native; direct = the same call)"
            )
        return text + (f", model {self.model}" if self.model else "")

    def block_size(self, block: int) -> int:
        """Calls per block. A block must be long against its own ramp-up and drain, or the ends (fewer
        calls in flight) dominate: ≥ 8 calls per worker, ≥ 1 s of scheduled calls."""
        if self.rate:
            return max(block, math.ceil(self.rate))
        return max(block, 8 * self.concurrency)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--scenarios",
        default="seq,seq:stream",
        help="comma-separated: seq, cN, rR, + ':stream', ':anthropic' | ':responses' (native) | "
        "':anthropic-x' | ':responses-x' (translated), '@MODEL'; 'goals' = issue #9's goal set, "
        "'issue21' = issue #21's (with the floor relay), 'issue29' = issue #29's (streams under load)",
    )
    ap.add_argument("--concurrency", type=int, action="append", default=[], help="add a cN scenario")
    ap.add_argument("--rate", type=float, action="append", default=[], help="add an open-loop rR scenario")
    ap.add_argument("--stream", action="store_true", help="--concurrency/--rate also add ':stream' twins")
    ap.add_argument("--requests", type=int, default=2000, help="measured calls per target per scenario")
    ap.add_argument("--warmup", type=int, default=200, help="unmeasured calls per target per scenario first")
    ap.add_argument("--block", type=int, default=200, help="calls per target before switching target")
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds per scenario (then truncated)")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per call")
    ap.add_argument("--strategy", default="priority", choices=STRATEGIES, help="gateway pool strategy")
    ap.add_argument(
        "--no-sticky",
        action="store_true",
        help="pool.sticky: false (the identical bench prompt otherwise pins every call to one route)",
    )
    ap.add_argument("--model", default="m1", help="model id (the bench fleet's pool)")
    ap.add_argument("--upstream", default="alpha", help="sim provider the direct baseline calls")
    ap.add_argument("--with-litellm", action="store_true", help="add LiteLLM's proxy (if installed)")
    ap.add_argument("--litellm-cmd", help="path of a `litellm` executable (implies --with-litellm)")
    ap.add_argument(
        "--litellm-scenarios",
        default="seq,seq:stream,c32",
        help="scenarios LiteLLM takes part in ('all' for every one; it takes ~20 ms a call)",
    )
    ap.add_argument(
        "--with-floor",
        action="store_true",
        help="add a bare 40-line relay (harness/floor_relay.py): the server stack's own cost, no gateway",
    )
    ap.add_argument(
        "--floor-servers",
        default="uvicorn",
        help="with --with-floor: the floor relay's HTTP server(s), comma-separated (uvicorn, granian); "
        "the uvicorn one is named 'floor', others 'floor-NAME'",
    )
    ap.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME:VAR=VALUE[,VAR=VALUE]",
        help="one more gateway target with these environment variables (A/B in one run, e.g. "
        "'base:PYTHONPATH=/tmp/base/src'); never part of the goal rows",
    )
    ap.add_argument("--goals", action="store_true", help="print issue #9's goal rows for these scenarios")
    ap.add_argument("--json", type=Path, help="write the full results here")
    ap.add_argument("--markdown", action="store_true", help="print a block ready for bench/RESULTS.md")
    ap.add_argument("--keep-logs", action="store_true", help="keep the children's logs and configs")
    args = ap.parse_args(argv)
    if args.scenarios == "goals":
        args.scenarios = ",".join(GOAL_SCENARIOS)
        args.goals = True
    if args.scenarios == "issue21":
        args.scenarios = ",".join(ISSUE21_SCENARIOS)
        args.goals = args.with_floor = True
    if args.scenarios == "issue29":
        args.scenarios = ",".join(ISSUE29_SCENARIOS)
        args.goals = args.with_floor = True
    names = [s for s in args.scenarios.split(",") if s.strip()]
    for c in args.concurrency:
        names += [f"c{c}"] + ([f"c{c}:stream"] if args.stream else [])
    for r in args.rate:
        names += [f"r{r:g}"] + ([f"r{r:g}:stream"] if args.stream else [])
    try:
        args.scenario_list = [Scenario.parse(n) for n in dict.fromkeys(names)]
    except ValueError as err:
        ap.error(str(err))
    if args.requests < 1 or args.warmup < 0 or args.block < 1:
        ap.error("--requests and --block must be ≥ 1, --warmup ≥ 0")
    return args


# ---- one scenario --------------------------------------------------------------------------------------


async def run_block(
    session: aiohttp.ClientSession, target: Target, body: bytes, n: int, sc: Scenario
) -> tuple[list[Sample], float]:
    # The body follows the target's dialect (the direct baseline of a translated scenario speaks OpenAI).
    if sc.rate:
        return await open_block(session, target, body, n, sc.rate, sc.stream)
    return await closed_block(session, target, body, n, sc.concurrency, sc.stream)


async def measured_block(
    session: aiohttp.ClientSession,
    target: Target,
    sim: procs.Child,
    body: bytes,
    n: int,
    sc: Scenario,
    tally: Tally,
) -> None:
    """One block, with the CPU of every party and the TCP connections opened meanwhile. The counters
    are read outside the timed region (reading /proc costs a few ms)."""
    gc.collect()  # the load generator's own GC pauses stay out of the blocks
    srv0 = target.server.cpu_seconds() if target.server else 0.0
    sim0 = sim.cpu_seconds()
    opens0 = procs.tcp_active_opens()
    me0 = time.process_time()
    samples, wall = await run_block(session, target, body, n, sc)
    me1 = time.process_time()
    opens1 = procs.tcp_active_opens()
    tally.server_cpu += (target.server.cpu_seconds() - srv0) if target.server else 0.0
    tally.upstream_cpu += sim.cpu_seconds() - sim0
    tally.client_cpu += me1 - me0
    if opens0 is None or opens1 is None or tally.tcp_opens is None:
        tally.tcp_opens = None
    else:
        tally.tcp_opens += opens1 - opens0
    tally.samples += samples
    tally.wall += wall
    tally.blocks += 1
    if target.server is not None and (mb := target.server.rss_mb()) is not None:
        tally.rss_mb.append(mb)


async def run_scenario(
    session: aiohttp.ClientSession,
    targets: list[Target],
    sim: procs.Child,
    sc: Scenario,
    args: argparse.Namespace,
) -> dict[str, Any]:
    targets = scenario_targets(targets, sc, args)
    model = sc.model or args.model
    bodies = {t.name: make_body(model, sc.stream, dialect=t.dialect) for t in targets}
    block = sc.block_size(args.block)
    # Warm-up in the scenario's own shape: connection pools grown to the concurrency, code paths and
    # caches warm in every process, the gateway's latency/health stats seeded. Not measured.
    # At least two calls per worker, or the widest scenarios would open their connections while measured.
    warmup = max(args.warmup, 2 * sc.concurrency) if args.warmup else 0
    for target in targets:
        if warmup:
            await run_block(session, target, bodies[target.name], warmup, sc)
    tallies = {t.name: Tally() for t in targets}
    rounds = math.ceil(args.requests / block)
    deadline = time.monotonic() + args.time_limit
    truncated = False
    for r in range(rounds):
        n = min(block, args.requests - r * block)
        # Rotate the order every round so no target always runs right after another one's block.
        order = targets[r % len(targets) :] + targets[: r % len(targets)]
        for target in order:
            await measured_block(session, target, sim, bodies[target.name], n, sc, tallies[target.name])
        if time.monotonic() > deadline and r + 1 < rounds:
            truncated = True  # stop between rounds: every target keeps the same number of calls
            break
    summaries = {
        t.name: Summary.of(t.name, tallies[t.name], sc.stream, t.server is not None) for t in targets
    }
    found = deltas(summaries)
    return {
        **asdict(sc),
        "block": block,
        "truncated": truncated,
        "summaries": summaries,
        "added": found,
        "comparisons": comparisons(summaries, found),
    }


def scenario_targets(
    targets: list[Target], sc: Scenario, args: argparse.Namespace, twins: dict[str, Any] | None = None
) -> list[Target]:
    """The targets of one scenario, each on its dialect's path.

    Native (`:anthropic`, `:responses`): every target speaks the client's dialect — the direct baseline
    makes the same call to the sim's route, the gateway relays it natively, the floor forwards it.
    Translated (`:anthropic-x`, `:responses-x`): the gateway target becomes its chat-only twin (`twins`:
    the same routes declared `dialects: [openai]`), which gets the client's body and does the same upstream
    work as the direct OpenAI baseline; the floor forwards the OpenAI body like the direct call; variants
    without a twin sit out. LiteLLM takes part in plain OpenAI scenarios only, and only those in
    --litellm-scenarios (too slow for c256 × 200)."""
    wanted = {n.strip() for n in args.litellm_scenarios.split(",")}
    twins = twins if twins is not None else getattr(args, "twins", {})
    out = []
    for t in targets:
        if t.name == "litellm" and (sc.dialect != "openai" or not ("all" in wanted or sc.name in wanted)):
            continue
        gateway = t.server is not None and t.name != "litellm" and not t.name.startswith("floor")
        if sc.dialect == "openai" or (sc.translated and not gateway):
            out.append(t)
            continue
        server = t.server
        if sc.translated:
            if t.name not in twins:
                continue
            server = twins[t.name]
            base = f"{server.url}/v1/chat/completions"
        else:
            base = t.url
        if sc.dialect == "gemini":  # the model and the method are in the path, below `/v1beta`
            root = base.removesuffix(PATHS["openai"]).removesuffix("/v1")
            url = root + "/v1beta" + gemini_path(sc.model or args.model, sc.stream)
        else:
            url = base.removesuffix(PATHS["openai"]) + PATHS[sc.dialect]
        out.append(Target(t.name, url, server, t.headers, dialect=sc.dialect))
    return out


async def check_targets(session: aiohttp.ClientSession, targets: list[Target], model: str) -> None:
    """One call of each kind per target before anything is timed: a broken target fails the run loudly
    instead of producing a table of errors."""
    for stream in (False, True):
        for t in targets:
            s = await one_call(
                session, t, make_body(model, stream, dialect=t.dialect), stream, time.perf_counter()
            )
            if not s.ok:
                raise RuntimeError(f"{t.name} ({'stream' if stream else 'non-stream'}) failed: {s.error}")
            if s.route:
                print(f"  {t.name}: {'stream' if stream else 'non-stream'} call served by {s.route}")


async def check_upstream_dialect(
    session: aiohttp.ClientSession, targets: list[Target], sc: Scenario, args: argparse.Namespace
) -> None:
    """The gateway really took the relay the scenario names: after one call through it, the sim's routes
    recorded that call in the client's dialect (native) or in Chat Completions (translated)."""
    gw = next(t for t in scenario_targets(targets, sc, args) if t.name == "modelpool")
    roots = [procs.provider_root_url(args.sim_config, pid) for pid in ("alpha", "beta")]
    for root in roots:
        async with session.delete(f"{root}/_sim/calls") as resp:
            resp.raise_for_status()
    sample = await one_call(session, gw, make_body(args.model, True, dialect=gw.dialect), True, 0.0)
    seen = []
    for root in roots:
        async with session.get(f"{root}/_sim/calls") as resp:
            seen += [c["dialect"] for c in (await resp.json())["calls"]]
    want = "openai" if sc.translated else sc.dialect
    if not sample.ok or seen != [want]:
        raise RuntimeError(f"{sc.describe()}: the upstream saw {seen} (expected [{want!r}]): {sample.error}")


async def run_all(targets: list[Target], sim: procs.Child, args: argparse.Namespace) -> list[dict[str, Any]]:
    widest = max((sc.concurrency for sc in args.scenario_list), default=1)
    async with new_session(widest, args.timeout) as session:
        await check_targets(session, targets, args.model)
        kinds = {(sc.dialect, sc.translated) for sc in args.scenario_list if sc.dialect != "openai"}
        for dialect, translated in sorted(kinds):
            check = Scenario("check", False, dialect=dialect, translated=translated)
            print(f"  checking {check.describe().removeprefix('check: concurrency 1, non-stream, ')}")
            await check_targets(session, scenario_targets(targets, check, args), args.model)
            await check_upstream_dialect(session, targets, check, args)
        results = []
        for sc in args.scenario_list:
            print(f"running {sc.describe()} …", flush=True)
            t0 = time.monotonic()
            results.append(await run_scenario(session, targets, sim, sc, args))
            print(f"  done in {time.monotonic() - t0:.1f}s", flush=True)
        return results


# ---- orchestration -------------------------------------------------------------------------------------


def litellm_version(exe: str) -> str:
    """Asked of the interpreter next to the executable: `litellm --version` imports the whole proxy."""
    python = Path(exe).resolve().parent / "python"
    cmd = [str(python), "-c", "import importlib.metadata as m; print(m.version('litellm'))"]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip() or "?"
    except (OSError, subprocess.TimeoutExpired):
        return "?"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    interrupt_on_signals()
    workdir = Path(tempfile.mkdtemp(prefix="modelpool-bench-"))
    children = procs.Children(workdir)
    doc: dict[str, Any] = {"date": now_utc(), "command": command_line(), "machine": machine_info()}
    with guarded_run(children, workdir, args.keep_logs) as run:
        # `alpha` and `beta` speak all three dialects: the direct baseline of a native scenario calls the
        # sim in the client's dialect, and the gateway picks the native relay per attempt (SPEC §1.6).
        sim, sim_config = procs.start_sim(children, preset="bench-native")
        upstream = procs.provider_base_url(sim_config, args.upstream)
        args.sim_config = sim_config
        # Two routes of one kind, no Anthropic-only route: the plans of every scenario stay the same.
        gateway = procs.start_gateway(
            children, sim_config, args.strategy, not args.no_sticky, providers=["alpha", "beta"]
        )
        print(f"sim fleet pid {sim.pid}, upstream {upstream}; gateway pid {gateway.pid} at {gateway.url}")
        args.twins = {}
        if any(sc.translated for sc in args.scenario_list):
            # The translated scenarios' gateway: the same routes declared chat-only, so an Anthropic or
            # Responses client goes through the translating relay.
            twin = procs.start_gateway(
                children, sim_config, args.strategy, not args.no_sticky, providers=["alpha", "beta"],
                dialects=["openai"], name="gateway-chat-only",
            )  # fmt: skip
            args.twins["modelpool"] = twin
            print(f"chat-only gateway (translated scenarios) pid {twin.pid} at {twin.url}")
        targets = [
            Target("direct", f"{upstream}/chat/completions", None),
            Target("modelpool", f"{gateway.url}/v1/chat/completions", gateway),
        ]
        for spec in args.variant:
            name, _, assignments = spec.partition(":")
            env = dict(a.split("=", 1) for a in assignments.split(",") if "=" in a)
            gw = procs.start_gateway(
                children, sim_config, args.strategy, not args.no_sticky, providers=["alpha", "beta"],
                name=name, env=env,
            )  # fmt: skip
            targets.append(Target(name, f"{gw.url}/v1/chat/completions", gw))
            print(f"variant {name} ({assignments}) pid {gw.pid} at {gw.url}")
        for stack in args.floor_servers.split(",") if args.with_floor else []:
            name = "floor" if stack == "uvicorn" else f"floor-{stack}"
            floor = procs.start_floor(children, upstream, stack, name)
            targets.append(Target(name, f"{floor.url}/v1/chat/completions", floor))
            print(f"floor relay ({stack}) pid {floor.pid} at {floor.url}")
        doc["litellm"] = _maybe_litellm(children, args, upstream, targets)
        doc["settings"] = {
            "preset": "bench-native",
            "model": args.model,
            "upstream": args.upstream,
            "strategy": args.strategy,
            "sticky": not args.no_sticky,
            "requests": args.requests,
            "warmup": args.warmup,
            "block": args.block,
            "time_limit": args.time_limit,
            "scenarios": [sc.name for sc in args.scenario_list],
        }
        watched = [t.server for t in targets if t.server is not None] + list(args.twins.values())
        sampler = procs.RssSampler(watched).start()
        try:
            import uvloop

            results = uvloop.run(run_all(targets, sim, args))
        except ImportError:  # pragma: no cover - uvloop ships with uvicorn[standard]
            results = asyncio.run(run_all(targets, sim, args))
        finally:
            doc["rss_series"] = sampler.stop()
        doc["gateway_log_errors"] = sum(procs.log_errors(g) for g in [gateway, *args.twins.values()])
        doc["machine"]["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    if run.code is not None:
        return run.code
    _output(doc, results, args)
    return 0


def _maybe_litellm(
    children: procs.Children, args: argparse.Namespace, upstream: str, targets: list[Target]
) -> dict[str, Any]:
    if not (args.with_litellm or args.litellm_cmd):
        return {}
    exe = procs.find_litellm(args.litellm_cmd)
    if exe is None:
        print(f"LiteLLM is not installed: skipping its column. Install it with: {procs.LITELLM_INSTALL}")
        print("  (or in a throwaway venv, then pass --litellm-cmd VENV/bin/litellm)")
        return {"skipped": "not installed"}
    version = litellm_version(exe)
    if version != procs.LITELLM_VERSION:
        print(f"note: LiteLLM {version} found; the reference version is {procs.LITELLM_VERSION}")
    print(f"starting LiteLLM {version} ({exe}) …", flush=True)
    lite = procs.start_litellm(children, exe, args.model, upstream)
    print(f"LiteLLM pid {lite.pid} at {lite.url}")
    targets.append(Target("litellm", f"{lite.url}/v1/chat/completions", lite))
    return {"version": version, "executable": exe}


def _output(doc: dict[str, Any], results: list[dict[str, Any]], args: argparse.Namespace) -> None:
    tables, md_tables = [], []
    for res in results:
        keys = ("name", "stream", "concurrency", "rate", "dialect", "model", "translated")
        sc = Scenario(**{k: res[k] for k in keys})
        title = sc.describe() + (" — TRUNCATED by --time-limit" if res["truncated"] else "")
        tables.append(scenario_table(title, res["summaries"], res["added"]))
        md_tables.append(scenario_table(title, res["summaries"], res["added"], md=True))
    print()
    print("\n\n".join(tables))
    if doc.get("gateway_log_errors"):
        print(f"\nwarning: the gateway logged {doc['gateway_log_errors']} error(s) during the run")
    doc["scenarios"] = [
        {**res, "summaries": {k: v.to_dict() for k, v in res["summaries"].items()}, "added": res["added"]}
        for res in results
    ]
    doc["comparisons"] = {res["name"]: res["comparisons"] for res in results}
    goals = overhead_goals(results) + issue21_goals(results) + issue29_goals(results)
    doc["goals"] = [g.to_dict() for g in goals]
    if args.goals and goals:
        print("\nthe goals (issues #9, #17, #21, #29) measured by this run\n" + goals_table(goals))
    if args.json:
        args.json.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
        print(f"\nJSON written to {args.json}")
    if args.markdown:
        print("\n" + markdown_block(doc, md_tables))
        if goals:
            print(goals_table(goals, md=True))


if __name__ == "__main__":
    sys.exit(main())
