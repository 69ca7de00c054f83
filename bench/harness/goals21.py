"""Issue #21's goals for bench/overhead.py's scenarios: the gateway against the direct call, the bare floor
relay (uvicorn + aiohttp, no gateway logic) and LiteLLM, in the same run.

    python overhead.py --scenarios issue21 --with-floor --litellm-cmd /tmp/litellm-venv/bin/litellm

The bounds come from the issue: Bifrost (Go) adds +0.44 ms p50 to a sequential call in
cuihuan/llm-gateway-bench; the floor relay, and every native relay's CPU per relayed chunk against it.
"""

from __future__ import annotations

from typing import Any

from harness.goals import C32, SEQ, SEQ_STREAM, Goal, check

DIALECTS = (("", "Chat"), (":anthropic", "Messages"), (":responses", "Responses"), (":gemini", "Gemini"))
BURST = {name: f"c256:stream{flag}@m200" for flag, name in DIALECTS}
PACED = {name: f"c256:stream{flag}@m200-paced" for flag, name in DIALECTS}
SCENARIOS = [SEQ, SEQ_STREAM, C32, *BURST.values(), *PACED.values()]
CPU_RATIO = 1.2  # a native relay's CPU per relayed chunk ÷ the floor relay's, same scenario


def _added(res: dict[str, Any], target: str, metric: str, field: str) -> float | None:
    for d in res["added"]:
        if d.target == target and d.metric == metric:
            return float(getattr(d, field))
    return None


def _floor(res: dict[str, Any], metric: str, field: str) -> str:
    value = _added(res, "floor", metric, field)
    return f"floor relay {value:+.2f} ms" if value is not None else "no floor in this run (--with-floor)"


def _cpu_chunk(res: dict[str, Any], target: str) -> float | None:
    s = res["summaries"].get(target)
    return s.server_cpu_us_per_chunk if s is not None and s.server_cpu_us_per_chunk else None


def latency_goals(by: dict[str, dict[str, Any]]) -> list[Goal]:
    goals = []
    if SEQ in by:
        for pct, limit in (("p50", 0.44), ("p99", 1.0)):
            value = _added(by[SEQ], "modelpool", "total", f"{pct}_ms")
            note = _floor(by[SEQ], "total", f"{pct}_ms")
            goals.append(check(f"#21 sequential non-stream: added {pct}", value, limit, " ms", note=note))
    if SEQ_STREAM in by:
        value = _added(by[SEQ_STREAM], "modelpool", "ttft", "p50_ms")
        note = _floor(by[SEQ_STREAM], "ttft", "p50_ms")
        goals.append(check("#21 sequential stream: added TTFT p50", value, 0.6, " ms", note=note))
    return goals


def throughput_goals(by: dict[str, dict[str, Any]]) -> list[Goal]:
    if C32 not in by:
        return []
    s = by[C32]["summaries"]
    mp = s.get("modelpool")
    goals = []
    litellm, floor = s.get("litellm"), s.get("floor")
    ratio = mp.rps / litellm.rps if mp and litellm and litellm.rps else None
    note = f"{mp.rps:,.0f} vs {litellm.rps:,.0f} req/s" if ratio else "LiteLLM not in this run"
    goals.append(check("#21 c32 non-stream: req/s ÷ LiteLLM's", ratio, 30, "×", at_least=True, note=note))
    share = mp.rps / floor.rps if mp and floor and floor.rps else None
    note = f"{mp.rps:,.0f} vs {floor.rps:,.0f} req/s" if share else "no floor in this run"
    goal = "#21 c32 non-stream: req/s ÷ floor relay's"
    goals.append(check(goal, share, 0.8, "×", at_least=True, note=note))
    return goals


def chunk_goals(by: dict[str, dict[str, Any]]) -> list[Goal]:
    return [
        *cpu_ratio_goals(by, "#21", "burst", BURST, CPU_RATIO),
        *cpu_ratio_goals(by, "#21", "paced 50 tok/s", PACED, CPU_RATIO),
    ]


def cpu_ratio_goals(
    by: dict[str, dict[str, Any]], issue: str, label: str, names: dict[str, str], bound: float
) -> list[Goal]:
    """Per dialect: modelpool's CPU per relayed chunk ÷ the floor relay's in the same scenario."""
    goals = []
    for dialect, scenario in names.items():
        if scenario not in by:
            continue
        mine, floor = _cpu_chunk(by[scenario], "modelpool"), _cpu_chunk(by[scenario], "floor")
        ratio = mine / floor if mine and floor else None
        note = f"{mine:.2f} vs {floor:.2f} µs" if mine and floor else "no floor in this run"
        goal = f"{issue} native {dialect} relay CPU per chunk ÷ floor's (256 streams, {label})"
        goals.append(check(goal, ratio, bound, "×", note=note))
    return goals


def issue21_goals(results: list[dict[str, Any]]) -> list[Goal]:
    by = {r["name"]: r for r in results}
    return latency_goals(by) + throughput_goals(by) + chunk_goals(by)
