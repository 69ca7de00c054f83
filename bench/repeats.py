"""Medians over repeated bench/overhead.py runs (their `--json` files): one row per scenario and target, and
one per goal row, each figure the median of the runs with every run's value beside it. On a shared,
loaded machine one run's figure moves by tens of percent; the median of a few runs is what gets cited.

    python bench/repeats.py bench/results/issue17/cpu-per-chunk-*.json
    python bench/repeats.py bench/results/issue17/seq-c32-litellm-*.json --markdown
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from pathlib import Path
from typing import Any

import orjson

from harness.report import md_table, plain_table

# (column, summary key, format)
COLUMNS = (
    ("proxy CPU µs/chunk", "server_cpu_us_per_chunk", "{:.2f}"),
    ("proxy CPU ms/call", "server_cpu_ms_per_call", "{:.3f}"),
    ("req/s", "rps", "{:,.0f}"),
)


def _median(values: list[float], fmt: str) -> str:
    if not values:
        return "-"
    each = " / ".join(fmt.format(v) for v in values)
    return f"{fmt.format(statistics.median(values))} ({each})" if len(values) > 1 else fmt.format(values[0])


def scenario_rows(docs: list[dict[str, Any]]) -> list[list[str]]:
    rows = []
    for sc in docs[0]["scenarios"]:
        name = sc["name"]
        runs = [next(s for s in d["scenarios"] if s["name"] == name) for d in docs]
        for target in sc["summaries"]:
            row = [name, target]
            for _, key, fmt in COLUMNS:
                vals = [r["summaries"][target].get(key) for r in runs if target in r["summaries"]]
                row.append(_median([float(v) for v in vals if v is not None], fmt))
            deltas = [
                d["p50_ms"]
                for r in runs
                for d in r["added"]
                if d["target"] == target and d["metric"] == "total"
            ]
            row.append(_median(deltas, "{:+.2f}"))
            rows.append(row)
    return rows


def goal_rows(docs: list[dict[str, Any]]) -> list[list[str]]:
    rows = []
    for goal in docs[0].get("goals", []):
        figures = []
        for d in docs:
            g = next((x for x in d.get("goals", []) if x["goal"] == goal["goal"]), None)
            m = re.match(r"[-+]?[\d,.]+", g["figure"]) if g else None
            if m:
                figures.append(float(m.group().replace(",", "")))
        unit = re.sub(r"^[-+]?[\d,.]+", "", goal["figure"])
        med = statistics.median(figures) if figures else None
        limit = float(re.sub(r"[^\d.]", "", goal["bound"]))
        met = (
            "-"
            if med is None
            else ("MET" if (med >= limit if "≥" in goal["bound"] else med <= limit) else "NOT MET")
        )
        each = " / ".join(f"{f:.2f}" for f in figures)
        rows.append([goal["goal"], goal["bound"], f"{med:.2f}{unit}" if med is not None else "-", met, each])
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", type=Path, help="overhead.py --json outputs of the same scenarios")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    docs = [orjson.loads(f.read_bytes()) for f in args.files]
    table = md_table if args.markdown else plain_table
    head = ["scenario", "target", *(c for c, _, _ in COLUMNS), "added p50 ms"]
    print(f"median of {len(docs)} runs (each run's value in brackets)\n")
    print(table(head, scenario_rows(docs)))
    goals = goal_rows(docs)
    if goals:
        print()
        print(table(["goal", "bound", "median", "met", "each run"], goals))
    return 0


if __name__ == "__main__":
    sys.exit(main())
