"""Issues #9's and #17's performance goals as rows: the figure each benchmark measured, the bound, met
or not.

Each script turns its own results into `Goal` rows (`overhead_goals` here for bench/overhead.py; memory,
startup and plan build theirs); bench/goals.py runs them all and prints one table. A goal whose scenario
was not run is simply absent — never reported as met.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

# The scenarios of one goal run of bench/overhead.py, by name (see Scenario.parse).
SEQ, SEQ_STREAM, C32 = "seq", "seq:stream", "c32"
# Translated: an Anthropic client on a chat-only route (`-x`); native: the client's dialect on a route that
# speaks it (issue #17: the Messages and Responses relays against the OpenAI byte-faithful one).
C256_STREAM, C256_TRANSLATED = "c256:stream@m200", "c256:stream:anthropic-x@m200"
PACED_STREAM, PACED_TRANSLATED = "c256:stream@m200-paced", "c256:stream:anthropic-x@m200-paced"
NATIVE_DIALECTS = (("anthropic", "Messages"), ("responses", "Responses"))
C256_NATIVE = {d: f"c256:stream:{d}@m200" for d, _ in NATIVE_DIALECTS}
PACED_NATIVE = {d: f"c256:stream:{d}@m200-paced" for d, _ in NATIVE_DIALECTS}
GOAL_SCENARIOS = [
    SEQ, SEQ_STREAM, C32, PACED_STREAM, PACED_TRANSLATED, *PACED_NATIVE.values(),
    C256_STREAM, C256_TRANSLATED, *C256_NATIVE.values(),
]  # fmt: skip
NATIVE_CPU_RATIO = 1.2  # issue #17: a native relay's CPU per chunk ÷ the OpenAI byte-faithful relay's


@dataclass
class Goal:
    goal: str
    bound: str  # the target, e.g. "≤ 1.0 ms"
    figure: str  # what was measured, formatted
    met: bool | None  # None: could not be measured in this run (see `note`)
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def check(
    goal: str, value: float | None, limit: float, unit: str, at_least: bool = False, note: str = ""
) -> Goal:
    """A goal `value ≤ limit` (or `≥` with `at_least`); a missing or NaN value is "not measured"."""
    bound = f"{'≥' if at_least else '≤'} {limit:g}{unit}"
    if value is None or math.isnan(value):
        return Goal(goal, bound, "-", None, note or "not measured in this run")
    met = value >= limit if at_least else value <= limit
    return Goal(goal, bound, f"{value:.2f}{unit}", met, note)


def _delta(res: dict[str, Any], target: str, metric: str, field: str) -> float | None:
    for d in res["added"]:
        if d.target == target and d.metric == metric:
            return float(getattr(d, field))
    return None


def _cpu_per_chunk(res: dict[str, Any] | None) -> float | None:
    if res is None:
        return None
    s = res["summaries"].get("modelpool")
    return s.server_cpu_us_per_chunk if s is not None else None


def _floor_note(res: dict[str, Any], metric: str, field: str, unit: str = " ms") -> str:
    """The same figure for the bare floor relay (`--with-floor`), when it ran: the server stack's share."""
    value = _delta(res, "floor", metric, field)
    return f"floor relay {value:+.2f}{unit}" if value is not None else ""


def _floor_cpu_note(res: dict[str, Any]) -> str:
    s = res["summaries"].get("floor")
    value = s.server_cpu_us_per_chunk if s is not None else None
    return f"floor relay {value:.1f} µs" if value else ""


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def overhead_goals(results: list[dict[str, Any]]) -> list[Goal]:
    by = {r["name"]: r for r in results}
    goals: list[Goal] = []
    if SEQ in by:
        for pct, limit in (("p50", 1.0), ("p99", 3.0)):
            goals.append(
                check(
                    f"sequential non-stream: added {pct} over direct",
                    _delta(by[SEQ], "modelpool", "total", f"{pct}_ms"),
                    limit,
                    " ms",
                    note=_floor_note(by[SEQ], "total", f"{pct}_ms"),
                )
            )
    if C32 in by:
        ratio = by[C32]["comparisons"].get("modelpool_over_litellm_rps")
        note = "" if ratio is not None else "LiteLLM not in this run (--litellm-cmd)"
        s = by[C32]["summaries"]
        if ratio is not None:
            note = f"{s['modelpool'].rps:,.0f} vs {s['litellm'].rps:,.0f} req/s"
        goals.append(
            check("concurrency 32 non-stream: req/s ÷ LiteLLM's", ratio, 20, "×", at_least=True, note=note)
        )
    # Burst = the fast fleet (zero think time: a reply in a few reads); paced = 50 tok/s, one
    # token per read, like a real model. In burst mode 256 closed-loop workers saturate a small machine and
    # the TTFT mostly measures the run queue; the floor relay's figure in the note shows the stack's share.
    for name, label in ((PACED_STREAM, "paced 50 tok/s"), (C256_STREAM, "burst")):
        if name not in by:
            continue
        res = by[name]
        head = f"256 streams × 200 chunks ({label})"
        ttft = _delta(res, "modelpool", "ttft", "p50_ms")
        note = _floor_note(res, "ttft", "p50_ms")
        goals.append(check(f"{head}: added TTFT p50", ttft, 2.0, " ms", note=note))
        cpu = _cpu_per_chunk(res)
        goals.append(
            check(f"{head}: gateway CPU per relayed chunk", cpu, 15, " µs", note=_floor_cpu_note(res))
        )
    pairs = ((PACED_STREAM, PACED_TRANSLATED, "paced"), (C256_STREAM, C256_TRANSLATED, "burst"))
    for same, translated, label in pairs:
        if translated not in by:
            continue
        a, b = _cpu_per_chunk(by.get(same)), _cpu_per_chunk(by[translated])
        ratio = b / a if a and b else None
        note = f"{b:.2f} vs {a:.2f} µs/chunk" if a and b else ""
        goal = f"translated stream CPU per chunk ÷ same-dialect ({label})"
        goals.append(check(goal, ratio, 2, "×", note=note))
    goals += native_goals(by)
    return goals


def native_goals(by: dict[str, dict[str, Any]]) -> list[Goal]:
    """Issue #17: the native Messages and Responses relays' CPU per relayed chunk ÷ the OpenAI
    byte-faithful relay's, same load and model (the floor relay's own ratio in the note: what the dialect's
    bigger or more numerous events cost any relay)."""
    goals = []
    for natives, same, label in ((PACED_NATIVE, PACED_STREAM, "paced"), (C256_NATIVE, C256_STREAM, "burst")):
        for dialect, name in NATIVE_DIALECTS:
            if natives[dialect] not in by:
                continue
            a, b = _cpu_per_chunk(by.get(same)), _cpu_per_chunk(by[natives[dialect]])
            ratio = b / a if a and b else None
            note = f"{b:.2f} vs {a:.2f} µs/chunk" if a and b else ""
            fa, fb = _floor_cpu(by.get(same)), _floor_cpu(by[natives[dialect]])
            if fa and fb:
                note = _join(note, f"floor relay {fb / fa:.2f}×")
            goal = f"native {name} stream CPU per chunk ÷ OpenAI byte-faithful ({label})"
            goals.append(check(goal, ratio, NATIVE_CPU_RATIO, "×", note=note))
    return goals


def _floor_cpu(res: dict[str, Any] | None) -> float | None:
    s = res["summaries"].get("floor") if res is not None else None
    return s.server_cpu_us_per_chunk if s is not None else None


def goals_table(goals: list[Goal], md: bool = False) -> str:
    from harness.report import md_table, plain_table

    head = ["goal", "bound", "measured", "met", "note"]
    rows = [
        [g.goal, g.bound, g.figure, {True: "MET", False: "NOT MET", None: "-"}[g.met], g.note] for g in goals
    ]
    return md_table(head, rows) if md else plain_table(head, rows)
