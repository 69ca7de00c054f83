"""Issue #9's goals in one command: runs overhead.py (the goal scenarios), memory.py, startup.py and
plan.py one after the other, keeps each one's JSON, and prints every goal as one table.

    python bench/goals.py --litellm-cmd /tmp/litellm-venv/bin/litellm --soak 600 --out bench/results/issue9
    python bench/goals.py --quick --out /tmp/goals     # self-check of the whole chain (~2 min)

The scripts run sequentially (never two benchmarks at once on the machine); each one's own output
goes to the terminal as it runs. `--quick` shrinks every count: its figures check the plumbing, not
the goals.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson

from harness.goals import GOAL_SCENARIOS, Goal, goals_table
from harness.report import machine_info, machine_lines, now_utc

HERE = Path(__file__).resolve().parent
# Reported, no goal row: sequential calls of each client dialect, native and translated, and open loop.
EXTRA_SCENARIOS = [
    "seq:anthropic", "seq:stream:anthropic", "seq:responses", "seq:stream:responses",
    "seq:anthropic-x", "seq:stream:anthropic-x", "r500", "r500:stream",
]  # fmt: skip


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--litellm-cmd", help="a `litellm` executable (the c32 goal is a ratio to LiteLLM)")
    ap.add_argument("--soak", type=float, default=600.0, help="memory soak seconds after warm-up")
    ap.add_argument("--out", type=Path, required=True, help="directory for every script's JSON")
    ap.add_argument("--quick", action="store_true", help="tiny counts: a self-check, not a measurement")
    ap.add_argument("--markdown", action="store_true", help="print the goal table as markdown too")
    return ap.parse_args(argv)


def plan_runs(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    out = args.out
    scenarios = ",".join(GOAL_SCENARIOS + EXTRA_SCENARIOS)
    overhead = [
        "overhead.py",
        "--scenarios",
        scenarios,
        "--time-limit",
        "300",
        "--json",
        str(out / "overhead.json"),
        "--with-floor",  # the bare relay: what the server stack alone costs, in the same run
    ]
    memory = ["memory.py", "--duration", f"{args.soak:g}", "--json", str(out / "memory.json")]
    startup = ["startup.py", "--json", str(out / "startup.json")]
    plan = ["plan.py", "--json", str(out / "plan.json")]
    plan_busy = ["plan.py", "--after-result", "--json", str(out / "plan-busy.json")]
    if args.litellm_cmd:
        overhead += ["--litellm-cmd", args.litellm_cmd]
    if args.quick:
        overhead += ["--requests", "300", "--warmup", "30", "--block", "100"]
        memory = ["memory.py", "--streams", "100", "--hold", "2", "--duration", "10", "--soak-warmup", "5"]
        memory += ["--json", str(out / "memory.json")]
        startup += ["--runs", "2", "--help-runs", "3"]
        plan += ["--calls", "1000", "--repeats", "2"]
        plan_busy += ["--calls", "1000", "--repeats", "2"]
    runs = [("overhead", overhead), ("memory", memory), ("startup", startup), ("plan", plan)]
    return [*runs, ("plan-busy", plan_busy)]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.out = args.out.resolve()  # the scripts run with bench/ as their working directory
    args.out.mkdir(parents=True, exist_ok=True)
    doc: dict[str, Any] = {"date": now_utc(), "machine": machine_info(), "runs": {}}
    goals: list[Goal] = []
    for name, cmd in plan_runs(args):
        print(f"\n=== {name}: python {' '.join(cmd)}", flush=True)
        t0 = time.monotonic()
        code = subprocess.run([sys.executable, str(HERE / cmd[0]), *cmd[1:]], cwd=HERE).returncode
        doc["runs"][name] = {"command": "python bench/" + " ".join(cmd), "exit": code,
                             "seconds": round(time.monotonic() - t0, 1)}  # fmt: skip
        path = args.out / f"{name}.json"
        if code != 0 or not path.exists():
            goals.append(Goal(f"{name}.py", "-", "-", None, f"the script failed (exit {code})"))
            continue
        goals += [Goal(**g) for g in orjson.loads(path.read_bytes()).get("goals", [])]
    doc["goals"] = [g.to_dict() for g in goals]
    (args.out / "goals.json").write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    met = sum(g.met is True for g in goals)
    print(f"\nissue #9 goals: {met} of {len(goals)} met\n" + goals_table(goals))
    if args.markdown:
        print("\n" + "\n".join(machine_lines({"machine": doc["machine"]})))
        for name, run in doc["runs"].items():
            print(f"- {name}: `{run['command']}` ({run['seconds']:.0f} s)")
        print("\n" + goals_table(goals, md=True))
    return 0 if all(r["exit"] == 0 for r in doc["runs"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
