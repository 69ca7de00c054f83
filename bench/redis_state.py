"""What the Redis state backend adds to a call, against SQLite and memory (issue #7), and how fast a change
made on one replica reaches another.

    python bench/redis_state.py                          # c32 non-stream, 3,000 calls per target (~1 min)
    python bench/redis_state.py --requests 300 --warmup 50   # a quick self-check
    python bench/redis_state.py --json out.json --markdown

One run starts `modelpool sim --preset bench`, a `redis-server` (no persistence) and three gateways on the
same two sim routes that differ only in `state.backend` (memory, sqlite, redis), then sends the same
closed-loop load to each (blocks alternated target by target, order rotated every round). The default
pool is round-robin without sticky pins, so every call writes state: a health record and a cursor step.
The added latency of Redis is `redis − sqlite` (the issue's figure; goal < 0.5 ms at p50, concurrency 32).

Propagation: two `RedisBackend`s in this process on the same Redis; one writes a pin, the time until the
other's change listener sees it is one sample (the pub/sub change feed, SPEC §9's "within one second").
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
import yaml

from harness import procs
from harness.load import Target, closed_block, make_body, new_session, one_call
from harness.report import command_line, machine_info, machine_lines, md_table, now_utc, plain_table
from harness.stats import Delta, Dist, Summary, Tally, percentile

BACKENDS = ("memory", "sqlite", "redis")


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=3000, help="measured calls per target")
    ap.add_argument("--warmup", type=int, default=300, help="unmeasured calls per target first")
    ap.add_argument("--block", type=int, default=300, help="calls per block (targets alternate by block)")
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--strategy", default="round-robin")
    ap.add_argument("--sticky", action="store_true", help="sticky pins on (one pin write per call)")
    ap.add_argument("--propagation", type=int, default=100, help="change-feed samples (each way)")
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--markdown", action="store_true", help="print a RESULTS.md block")
    ap.add_argument("--keep", action="store_true", help="keep the run's temp dir (logs)")
    return ap.parse_args()


def start_redis(children: procs.Children) -> str:
    exe = shutil.which("redis-server")
    if exe is None:
        sys.exit("redis-server is not installed (apt-get install redis-server)")
    port = procs.free_port()
    argv = [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    child = children.spawn("redis", [*argv, "--dir", str(children.workdir)])

    def ping() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    procs.wait_until("redis-server", child, ping, 15)
    return f"redis://127.0.0.1:{port}/0"


def start_gateways(
    children: procs.Children, sim_config: dict[str, Any], redis_url: str, args: argparse.Namespace
) -> list[Target]:
    states = {
        "memory": {"backend": "memory"},
        "sqlite": {"backend": "sqlite", "path": str(children.workdir / "state.db")},
        "redis": {"backend": "redis", "redis_url": redis_url, "redis_prefix": "bench"},
    }
    targets = []
    for name in BACKENDS:
        config = procs.gateway_config(
            sim_config,
            args.strategy,
            args.sticky,
            providers=["alpha", "beta"],
            overrides={"state": states[name]},
        )
        path = children.workdir / f"gateway-{name}.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        port = procs.free_port()
        argv = [sys.executable, "-m", "modelpool.cli.main", "serve", "--config", str(path)]
        child = children.spawn(name, [*argv, "--port", str(port), "--log-level", "warning"])
        child.url = f"http://127.0.0.1:{port}"
        procs.wait_until(f"the {name} gateway", child, lambda c=child: procs.http_ok(f"{c.url}/readyz"), 30)
        auth = {"authorization": f"Bearer {procs.CLIENT_KEY}"}
        targets.append(Target(name, f"{child.url}/v1/chat/completions", child, auth))
    return targets


async def run_load(targets: list[Target], args: argparse.Namespace) -> dict[str, Tally]:
    body = make_body("m1", False)
    tallies = {t.name: Tally() for t in targets}
    async with new_session(args.concurrency, 60) as session:
        for t in targets:
            sample = await one_call(session, t, body, False, time.perf_counter())
            if not sample.ok:
                raise RuntimeError(f"{t.name}: {sample.error}")
            await closed_block(session, t, body, args.warmup, args.concurrency, False)
        rnd = 0
        while min(len(tl.samples) for tl in tallies.values()) < args.requests:
            order = targets[rnd % len(targets) :] + targets[: rnd % len(targets)]
            for t in order:
                assert t.server is not None
                cpu0 = t.server.cpu_seconds()
                samples, wall = await closed_block(session, t, body, args.block, args.concurrency, False)
                tally = tallies[t.name]
                tally.samples += samples
                tally.wall += wall
                tally.server_cpu += t.server.cpu_seconds() - cpu0
                tally.blocks += 1
            rnd += 1
    return tallies


async def propagation(redis_url: str, n: int, gap: float) -> list[float]:
    """Write a pin on one backend, time until another backend's listener has it; `gap` seconds apart."""
    from modelpool.state.redis_backend import RedisBackend

    a, b = RedisBackend(redis_url, prefix="bench-feed"), RedisBackend(redis_url, prefix="bench-feed")
    arrived = asyncio.Event()
    b.set_listener(lambda ns, key, value: arrived.set())
    await a.start()
    await b.start()
    samples = []
    try:
        for i in range(n):
            arrived.clear()
            t0 = time.perf_counter()
            pin = {"route": "alpha/m1", "last_used": time.time(), "lifetime": 60}
            a.put("pins", f"session:s{i}\x1fm1", pin)
            await asyncio.wait_for(arrived.wait(), 5)
            samples.append(time.perf_counter() - t0)
            await asyncio.sleep(gap)
    finally:
        await a.close()
        await b.close()
    return samples


def feed_line(what: str, feed: list[float]) -> str:
    ms = sorted(s * 1000 for s in feed)
    return (
        f"change feed, {what} ({len(ms)} samples): p50 {percentile(ms, 50):.2f} ms, "
        f"p99 {percentile(ms, 99):.2f} ms, max {ms[-1]:.2f} ms"
    )


def report(
    summaries: dict[str, Summary],
    feeds: dict[str, list[float]],
    args: argparse.Namespace,
    machine: dict[str, Any],
) -> dict[str, Any]:
    head = ["backend", "calls", "err", "p50 ms", "p90 ms", "p99 ms", "mean ms", "calls/s", "gw CPU ms/call"]
    rows = [
        [
            name,
            str(s.calls),
            str(s.errors),
            f"{s.total.p50:.2f}",
            f"{s.total.p90:.2f}",
            f"{s.total.p99:.2f}",
            f"{s.total.mean:.2f}",
            f"{s.rps:.0f}",
            f"{s.server_cpu_ms_per_call:.2f}" if s.server_cpu_ms_per_call is not None else "-",
        ]
        for name, s in summaries.items()
    ]
    pairs = [("redis", "sqlite"), ("sqlite", "memory"), ("redis", "memory")]
    added = {
        f"{x} − {y}": Delta.between(x, "total", summaries[x].total, summaries[y].total) for x, y in pairs
    }
    drows = [[k, f"{d.p50_ms:+.2f}", f"{d.p90_ms:+.2f}", f"{d.p99_ms:+.2f}"] for k, d in added.items()]
    lines = [feed_line(what, feed) for what, feed in feeds.items()]
    goal = added["redis − sqlite"].p50_ms
    verdict = (
        f"goal redis − sqlite < 0.5 ms at p50 (c{args.concurrency}): {'MET' if goal < 0.5 else 'NOT MET'}"
    )
    print(plain_table(head, rows))
    print()
    print(plain_table(["added latency", "p50 ms", "p90 ms", "p99 ms"], drows))
    print("\n".join([*lines, verdict]))
    if args.markdown:
        print(f"\n- command: `{command_line()}`")
        print("\n".join(machine_lines({"machine": machine})))
        print(
            "\n"
            + md_table(head, rows)
            + "\n\n"
            + md_table(["added latency", "p50 ms", "p90 ms", "p99 ms"], drows)
        )
        print("\n" + "\n".join(f"- {line}" for line in [*lines, verdict]))
    return {
        "summaries": {k: v.to_dict() for k, v in summaries.items()},
        "added": {k: vars(d) for k, d in added.items()},
        "feed_ms": {what: Dist.of(feed).__dict__ for what, feed in feeds.items()},
    }


def main() -> int:
    args = parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="modelpool-bench-redis-"))
    children = procs.Children(workdir)
    started = now_utc()
    machine = machine_info()
    try:
        _, sim_config = procs.start_sim(children)
        redis_url = start_redis(children)
        targets = start_gateways(children, sim_config, redis_url, args)
        tallies = asyncio.run(run_load(targets, args))
        feeds = {
            "idle writer (calls 100 ms apart)": asyncio.run(propagation(redis_url, args.propagation, 0.1)),
            "busy writer (back to back: the 50 ms batch window)": asyncio.run(
                propagation(redis_url, args.propagation, 0.0)
            ),
        }
        errors = {t.name: procs.log_errors(t.server) for t in targets if t.server is not None}
    finally:
        children.stop_all()
        procs.cleanup_workdir(workdir, args.keep)
    summaries = {name: Summary.of(name, tally, False, True) for name, tally in tallies.items()}
    machine["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print(f"{started} — {command_line()}")
    doc = report(summaries, feeds, args, machine)
    doc.update(
        started=started, machine=machine, args=vars(args) | {"json": str(args.json)}, log_errors=errors
    )
    if args.json:
        args.json.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY))
    return 0


if __name__ == "__main__":
    sys.exit(main())
