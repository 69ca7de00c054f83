"""The observed outcome of each fault scenario run, and `docs/faults.md` rendered from them.

`MODELPOOL_FAULTS_REPORT=FILE pytest tests/faults/test_scenarios.py` writes what every run observed (from
the client's and the gateway's side, not from the expectations) to FILE as JSON;
`python tests/faults/scenario_report.py FILE > docs/faults.md` renders it.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson

DIALECT_NAMES = {"chat": "Chat Completions", "messages": "Messages", "responses": "Responses"}
COLUMNS = [(d, m) for d in DIALECT_NAMES for m in ("once", "stream")]
FINDINGS = [
    "## Product fixes these scenarios led to",
    "",
    "- **slow-trickle, non-streamed**: aiohttp's socket-read timer (the `idle` timeout) also ran while a",
    "  provider generated a non-streamed answer, so every answer slower than `idle` was cut, retried (paid",
    "  twice) and switched. The relays now enforce `idle` themselves, per stream read; a non-streamed answer",
    "  is bounded by `response` alone.",
    "- **huge-response**: a large stream read slower than it arrived left that aiohttp timer re-armed on the",
    "  pooled upstream connection; it fired there, and the next call on the connection failed at once with a",
    '  stale "Timeout on reading data from socket" (a needless retry). Gone with the same change.',
    "- **malformed chunk in a stream**: recorded as `unclassified`, the same fault without a stream as",
    "  `server`; an error inside a 200 stream is now `server` unless its text says otherwise.",
    "",
    "Observed, not changed: an OpenAI-dialect request without `max_tokens` carried to an Anthropic",
    "route gets the translation's default of 4096 tokens (finish_reason `length`, so not a silent cut);",
    "the suite's clients ask for more. A failure after reasoning but before answer text, retried or",
    "switched, streams a second reasoning phase after the first (reasoning is not content, SPEC §3.2);",
    "answer text never repeats.",
]


def client_cell(seen: list[Any], timed: bool = False) -> str:
    """What the client saw, in a few words (several calls of a repeated scenario are joined by `/`);
    `timed` adds how long the call took."""
    return " / ".join(_one(s) + (f", {s.elapsed:.1f} s" if timed else "") for s in seen)


def _one(seen: Any) -> str:
    tokens = len(re.findall(r"\btok\d+", seen.text))
    if seen.status != 200:
        named = re.findall(r"(\w+/\w+): ([\w-]+)", seen.error or "")
        return f"HTTP {seen.status}, names " + ", ".join(f"{r} {k}" for r, k in dict(named).items())
    if seen.error is not None or not seen.completed:
        terminator = "terminator!" if seen.terminated else "no terminator"
        return f"{tokens} tok + error, {terminator}"
    out = f"ok {seen.route} ({tokens} tok), {seen.attempts} att"
    switched = seen.headers.get("x-modelpool-switched")
    if switched:
        out += f", switched ({switched.rsplit('(', 1)[-1].rstrip(')')})"
    return out


def render(rows: list[dict[str, Any]]) -> str:
    by_case: dict[tuple[str, str], dict[tuple[str, str], dict[str, Any]]] = defaultdict(dict)
    notes: dict[str, str] = {}
    order: list[tuple[str, str]] = []
    for row in rows:
        key = (row["scenario"], row["kind"])
        if key not in by_case:
            order.append(key)
        by_case[key][(row["dialect"], row["mode"])] = row
        notes[row["scenario"]] = row["note"]
    lines = [
        "# Fault scenarios: observed outcomes",
        "",
        "Generated from a run of `tests/faults/test_scenarios.py` (see `tests/faults/scenario_report.py`):",
        "every cell is what that run observed, and every run asserted it (a failed assertion shows as ✗).",
        "P is the pool's primary route, S the secondary; routes are `provider/model` of the simulated fleet",
        "(`alpha`/`beta` OpenAI-compatible, `gamma`/`delta` Anthropic). The gateway ran with",
        "`retries_per_route: 1`, timeouts `first_byte 1500ms`, `idle 500ms`, `response 2s`.",
        "`N tok` counts the answer tokens the client received; every whole reply was exactly the served",
        "route's text and every cut one exactly its first N tokens: no duplicated text anywhere.",
        "",
        "## What the client saw",
        "",
        "| scenario | route kind | " + " | ".join(f"{DIALECT_NAMES[d]} {m}" for d, m in COLUMNS) + " |",
        "|---|---|" + "---|" * len(COLUMNS),
    ]
    for sc, kind in order:
        cells = by_case[(sc, kind)]
        row_cells = []
        for col in COLUMNS:
            row = cells.get(col)
            if row is None:
                row_cells.append("n/a")
            else:
                mark = "" if row["passed"] else "✗ "
                row_cells.append(mark + row["client"])
        lines.append(f"| {sc} | {kind} | " + " | ".join(row_cells) + " |")
    lines += [
        "",
        "## What the gateway recorded",
        "",
        "Failure events (`/admin/events`) in order, P's mark and rest in `/admin/status` after the call,",
        "and the upstream requests P and S received — the same in every dialect unless listed apart.",
        "",
        "| scenario | route kind | mode | failure events | P afterwards | upstream requests P/S |",
        "|---|---|---|---|---|---|",
    ]
    for sc, kind in order:
        for mode in ("once", "stream"):
            recs = {_record(r) for (d, m), r in by_case[(sc, kind)].items() if m == mode and "record" in r}
            if recs:
                for rec in sorted(recs):
                    lines.append(f"| {sc} | {kind} | {mode} | {rec} |")
    lines += ["", "## Scenarios", ""]
    lines += [f"- **{sc}**: {note}" for sc, note in notes.items()]
    lines += ["", *FINDINGS]
    return "\n".join(lines) + "\n"


def _record(row: dict[str, Any]) -> str:
    rec = row["record"]
    events = ", ".join(f"{r} {k}" for r, k in rec["failures"]) or "none"
    mark = rec["mark"] or "ok"
    if rec["rest"]:
        mark += f", rests {_duration(rec['rest'])}"
    return f"{events} | {mark} | {rec['calls'][0]}/{rec['calls'][1]}"


def _duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:g} h"
    return f"{seconds:g} s"


def main(path: str) -> None:
    rows = orjson.loads(Path(path).read_bytes())
    sys.stdout.write(render(rows))


if __name__ == "__main__":
    main(sys.argv[1])
