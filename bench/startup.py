"""Start-up costs a user feels: `modelpool --help` (lazy imports) and `modelpool serve` until ready.

    python bench/startup.py                   # --help × 11, serve × 5 (~15 s)
    python bench/startup.py --runs 3 --help-runs 3   # self-check

- `--help`: wall time of the whole process, spawn → exit, median of `--help-runs`.
- `serve`: spawn → the first `GET /readyz` answering 200 (polled every 5 ms), median of `--runs`, each
  a fresh process on a free port with the bench config (the sim's providers: discovery really runs
  against live loopback upstreams, memory state, no holiday download).

The console script next to the running interpreter is used, never a pyenv/asdf *shim* (a bash script that
adds ~50 ms of its own); `python -m modelpool.cli.main` when there is none.
"""

from __future__ import annotations

import argparse
import http.client
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
import yaml

from harness import procs
from harness.goals import Goal, check, goals_table
from harness.report import command_line, machine_info, machine_lines, md_table, now_utc, plain_table


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5, help="serve start-ups")
    ap.add_argument("--help-runs", type=int, default=11, help="`modelpool --help` runs")
    ap.add_argument("--json", type=Path, help="write the full results here")
    ap.add_argument("--markdown", action="store_true", help="print a block ready for bench/RESULTS.md")
    return ap.parse_args(argv)


def child_env() -> dict[str, str]:
    """The environment of the measured processes: bytecode caching on. An installed package has its .pyc
    files (pip compiles them); a `PYTHONDONTWRITEBYTECODE=1` dev shell would recompile every module
    on every start and measure the compiler instead. One unmeasured run first writes the caches."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["MODELPOOL_ADMIN_TOKEN"] = procs.ADMIN_TOKEN
    return env


def modelpool_cmd() -> list[str]:
    script = Path(sys.executable).parent / "modelpool"
    return [str(script)] if script.exists() else [sys.executable, "-m", "modelpool.cli.main"]


def time_help(runs: int) -> list[float]:
    out = []
    for i in range(runs + 1):
        t0 = time.perf_counter()
        subprocess.run([*modelpool_cmd(), "--help"], check=True, capture_output=True, env=child_env())
        if i:  # the first run writes the bytecode caches: not measured
            out.append(time.perf_counter() - t0)
    return out


def _ready(port: int) -> bool:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
    try:
        conn.request("GET", "/readyz")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


def time_serve(config_path: Path, workdir: Path, runs: int) -> list[float]:
    out = []
    for i in range(runs + 1):  # the first run writes the bytecode caches: not measured
        port = procs.free_port()
        argv = [*modelpool_cmd(), "serve", "--config", str(config_path), "--port", str(port)]
        log = open(workdir / f"serve-{i}.log", "wb")  # noqa: SIM115 - closed below
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [*argv, "--log-level", "warning"],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=child_env(),
            start_new_session=True,
        )
        try:
            while not _ready(port):
                if proc.poll() is not None:
                    raise RuntimeError(f"modelpool serve exited with {proc.returncode}")
                if time.perf_counter() - t0 > 30:
                    raise TimeoutError("modelpool serve not ready after 30 s")
                time.sleep(0.005)
            if i:
                out.append(time.perf_counter() - t0)
        finally:
            proc.terminate()
            proc.wait(10)
            log.close()
    return out


def summary(values: list[float]) -> dict[str, float]:
    ms = [v * 1000 for v in values]
    return {"median_ms": statistics.median(ms), "min_ms": min(ms), "max_ms": max(ms), "runs": len(ms)}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="modelpool-bench-"))
    children = procs.Children(workdir)
    doc: dict[str, Any] = {"date": now_utc(), "command": command_line(), "machine": machine_info()}
    try:
        help_times = time_help(args.help_runs)
        _, sim_config = procs.start_sim(children)
        config = procs.gateway_config(sim_config, "priority", providers=["alpha", "beta"])
        config_path = workdir / "gateway.yaml"
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        serve_times = time_serve(config_path, workdir, args.runs)
    except (RuntimeError, TimeoutError, OSError, subprocess.CalledProcessError) as err:
        print(f"benchmark failed: {err}", file=sys.stderr)
        return 1
    finally:
        children.stop_all()
        for f in workdir.iterdir():
            f.unlink()
        workdir.rmdir()
    doc["machine"]["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    doc["help"] = summary(help_times)
    doc["serve_ready"] = summary(serve_times)
    doc["command_used"] = " ".join(modelpool_cmd())
    rows = [
        check(
            "`modelpool serve` ready after start (median)", doc["serve_ready"]["median_ms"] / 1000, 1.5, " s"
        ),
        check("`modelpool --help` (median)", doc["help"]["median_ms"] / 1000, 0.3, " s"),
    ]
    doc["goals"] = [g.to_dict() for g in rows]
    _print(doc, args, rows)
    return 0


def _print(doc: dict[str, Any], args: argparse.Namespace, rows: list[Goal]) -> None:
    head = ["measure", "median ms", "min ms", "max ms", "runs"]
    table = [
        [name, f"{s['median_ms']:.0f}", f"{s['min_ms']:.0f}", f"{s['max_ms']:.0f}", str(s["runs"])]
        for name, s in (("modelpool --help", doc["help"]), ("serve: spawn → /readyz 200", doc["serve_ready"]))
    ]
    print(f"command: {doc['command_used']}\n" + plain_table(head, table) + "\n\n" + goals_table(rows))
    if args.json:
        args.json.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
        print(f"\nJSON written to {args.json}")
    if args.markdown:
        lines = [
            f"### startup — {doc['date']}",
            "",
            f"- command: `{doc['command']}`",
            *machine_lines(doc),
            "",
        ]
        print("\n".join(lines) + "\n" + md_table(head, table) + "\n\n" + goals_table(rows, md=True))


if __name__ == "__main__":
    sys.exit(main())
