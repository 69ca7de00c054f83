"""Issue #29's goals for bench/overhead.py's scenarios: streams under load against the floor relay (uvicorn
+ aiohttp, no gateway logic) in the same run, and the goals already met that must keep holding.

    python overhead.py --scenarios issue29 --litellm-cmd /tmp/litellm-venv/bin/litellm

Medians of three runs: `python repeats.py results/issue29/goals29-*.json --goals`.
"""

from __future__ import annotations

from typing import Any

from harness.goals import C32, SEQ, Goal, check
from harness.goals21 import DIALECTS, _added, cpu_ratio_goals

C32_STREAM, C128_STREAM = "c32:stream", "c128:stream@m200"
BURST = {name: f"c256:stream{flag}@m200" for flag, name in DIALECTS}
PACED = {name: f"c256:stream{flag}@m200-paced" for flag, name in DIALECTS}
SCENARIOS = [SEQ, C32, C32_STREAM, C128_STREAM, *BURST.values(), *PACED.values()]


def stream_goals(by: dict[str, dict[str, Any]]) -> list[Goal]:
    goals = []
    for name in (C32_STREAM, C128_STREAM):
        if name not in by:
            continue
        s = by[name]["summaries"]
        mp, floor = s.get("modelpool"), s.get("floor")
        share = mp.rps / floor.rps if mp and floor and floor.rps else None
        note = f"{mp.rps:,.0f} vs {floor.rps:,.0f} req/s" if share else "no floor in this run"
        goals.append(check(f"#29 {name}: req/s ÷ floor relay's", share, 0.9, "×", at_least=True, note=note))
        ratio = mp.total.p50 / floor.total.p50 if mp and floor and floor.total.p50 else None
        note = f"{mp.total.p50:.1f} vs {floor.total.p50:.1f} ms" if ratio else "no floor in this run"
        goals.append(check(f"#29 {name}: p50 stream time ÷ floor's", ratio, 1.15, "×", note=note))
    return goals


def chunk_goals(by: dict[str, dict[str, Any]]) -> list[Goal]:
    return [
        *cpu_ratio_goals(by, "#29", "burst", BURST, 1.2),
        *cpu_ratio_goals(by, "#29", "paced 50 tok/s", PACED, 1.1),
    ]


def kept_goals(by: dict[str, dict[str, Any]]) -> list[Goal]:
    """What issue #21 met and #29 keeps: sequential p50 within +0.15 ms of the floor's, c32 non-stream
    ≥ 0.8× the floor's and ≥ 30× LiteLLM's requests/s."""
    goals = []
    if SEQ in by:
        mine, floor = (
            _added(by[SEQ], "modelpool", "total", "p50_ms"),
            _added(by[SEQ], "floor", "total", "p50_ms"),
        )
        over = mine - floor if mine is not None and floor is not None else None
        note = (
            f"+{mine:.2f} vs floor +{floor:.2f} ms over direct"
            if over is not None
            else "no floor in this run"
        )
        goals.append(
            check("#29 sequential non-stream: p50 over the floor relay's", over, 0.15, " ms", note=note)
        )
    if C32 in by:
        s = by[C32]["summaries"]
        mp, floor, litellm = s.get("modelpool"), s.get("floor"), s.get("litellm")
        share = mp.rps / floor.rps if mp and floor and floor.rps else None
        goals.append(check("#29 c32 non-stream: req/s ÷ floor relay's", share, 0.8, "×", at_least=True))
        ratio = mp.rps / litellm.rps if mp and litellm and litellm.rps else None
        note = f"{mp.rps:,.0f} vs {litellm.rps:,.0f} req/s" if ratio else "LiteLLM not in this run"
        goals.append(check("#29 c32 non-stream: req/s ÷ LiteLLM's", ratio, 30, "×", at_least=True, note=note))
    return goals


def issue29_goals(results: list[dict[str, Any]]) -> list[Goal]:
    by = {r["name"]: r for r in results}
    return stream_goals(by) + chunk_goals(by) + kept_goals(by)
