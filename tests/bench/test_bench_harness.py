"""Self-checks of issue #9's benchmark harness: scenario parsing, goal rows, and each script run end to end
with tiny counts against the real simulated fleet and gateway. Nothing here asserts a speed: the figures
of a run this small mean nothing, only that every row and column the RESULTS.md tables need is there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from harness.goals import C32, SEQ, check, overhead_goals  # noqa: E402
from harness.stats import Delta, Summary  # noqa: E402
from overhead import Scenario  # noqa: E402


def test_scenario_grammar() -> None:
    sc = Scenario.parse("c256:stream:anthropic@m200-paced")
    assert (sc.concurrency, sc.stream, sc.dialect, sc.model) == (256, True, "anthropic", "m200-paced")
    assert not sc.translated  # an Anthropic client on a route that speaks Messages: the native relay
    assert (
        Scenario.parse("seq:anthropic-x").translated
        and Scenario.parse("seq:anthropic-x").dialect == "anthropic"
    )
    assert (Scenario.parse("c2:responses").dialect, Scenario.parse("seq:responses-x").translated) == (
        "responses",
        True,
    )
    assert Scenario.parse("seq").dialect == "openai" and Scenario.parse("seq").model is None
    assert Scenario.parse("r300:stream").rate == 300
    for bad in ("c0", "seq:fast", "seq:stream:stream", "x1", "r-5", "seq:anthropic:responses"):
        with pytest.raises(ValueError):
            Scenario.parse(bad)


def test_goal_rows() -> None:
    assert check("g", 0.9, 1.0, " ms").met is True
    assert check("g", 1.1, 1.0, " ms").met is False
    assert check("g", 21, 20, "×", at_least=True).met is True
    assert check("g", None, 1.0, " ms").met is None  # not measured is never "met"


def _summary(name: str, rps: float) -> Summary:
    from harness.stats import Dist

    d = Dist(1, 1, 1, 1, 1, 1)
    return Summary(name, 10, 0, rps, d, None, 0.5, 0.1, 0.1, 0.0, {}, [])


def test_overhead_goals_only_for_scenarios_that_ran() -> None:
    seq = {
        "name": SEQ,
        "added": [Delta("modelpool", "total", 0.8, 1.0, 2.5, 0.9, 2.0, 2.0)],
        "summaries": {},
        "comparisons": {},
    }
    rows = overhead_goals([seq])
    assert [r.met for r in rows] == [True, True] and "p50" in rows[0].goal and "p99" in rows[1].goal
    c32 = {
        "name": C32,
        "added": [],
        "summaries": {"modelpool": _summary("modelpool", 1000), "litellm": _summary("litellm", 60)},
        "comparisons": {"modelpool_over_litellm_rps": 1000 / 60},
    }
    row = overhead_goals([c32])[0]
    assert row.met is False and "1,000 vs 60" in row.note  # 16.7× < 20×


def test_issue29_goal_rows_compare_streams_with_the_floor_relay() -> None:
    from dataclasses import replace

    from harness.goals29 import issue29_goals
    from harness.stats import Dist

    def stream(name: str, rps: float, p50: float, cpu_chunk: float) -> Summary:
        return replace(
            _summary(name, rps), total=Dist(p50, p50, p50, p50, p50, p50), server_cpu_us_per_chunk=cpu_chunk
        )

    c32 = {
        "name": "c32:stream",
        "added": [],
        "comparisons": {},
        "summaries": {
            "modelpool": stream("modelpool", 950, 11.0, 9.0),
            "floor": stream("floor", 1000, 10.0, 6.0),
        },
    }
    burst = {
        "name": "c256:stream:gemini@m200",
        "added": [],
        "comparisons": {},
        "summaries": {
            "modelpool": stream("modelpool", 900, 50.0, 1.5),
            "floor": stream("floor", 1000, 40.0, 1.0),
        },
    }
    rows = {r.goal: r for r in issue29_goals([c32, burst])}
    assert rows["#29 c32:stream: req/s ÷ floor relay's"].met is True  # 0.95 ≥ 0.9
    assert rows["#29 c32:stream: p50 stream time ÷ floor's"].met is True  # 1.1 ≤ 1.15
    gemini = rows["#29 native Gemini relay CPU per chunk ÷ floor's (256 streams, burst)"]
    assert gemini.met is False and gemini.figure == "1.50×"
    assert not any("c128" in goal or "paced" in goal for goal in rows)  # only what ran


def _run(script: str, *args: str, tmp_path: Path) -> dict:
    out = tmp_path / f"{script}.json"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(BENCH.parent / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.run(
        [sys.executable, str(BENCH / script), *args, "--json", str(out)],
        cwd=BENCH,
        env=env,
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return orjson.loads(out.read_bytes())


@pytest.mark.timeout(180)
def test_overhead_reports_every_scenario_target_and_column(tmp_path: Path) -> None:
    scenarios = "seq,c2:stream@m200,seq:stream:anthropic,seq:stream:responses,seq:stream:anthropic-x,r50"
    doc = _run(
        "overhead.py", "--scenarios", scenarios, "--requests", "12", "--warmup", "2", "--with-floor",
        tmp_path=tmp_path,
    )  # fmt: skip
    by = {s["name"]: s for s in doc["scenarios"]}
    assert list(by) == scenarios.split(",")
    for res in by.values():
        # The floor relay forwards the OpenAI body in the translated scenario, like the direct call, and
        # the client's dialect in the native ones.
        assert set(res["summaries"]) == {"direct", "modelpool", "floor"}
        assert all(s["errors"] == 0 and s["calls"] == 12 for s in res["summaries"].values())
        assert {(d["target"], d["metric"]) for d in res["added"]} >= {("modelpool", "total")}
    burst = by["c2:stream@m200"]["summaries"]["modelpool"]
    assert burst["chunks_per_call"] >= 200 and burst["server_cpu_us_per_chunk"] > 0
    assert burst["rss_mb_peak"] > 0 and doc["rss_series"]
    for name in ("seq:stream:anthropic", "seq:stream:responses", "seq:stream:anthropic-x"):
        assert ("modelpool", "ttft") in {(d["target"], d["metric"]) for d in by[name]["added"]}
    assert by["seq:stream:responses"]["dialect"] == "responses" and by["seq:stream:anthropic-x"]["translated"]
    assert [g["goal"] for g in doc["goals"]][:2] == [
        "sequential non-stream: added p50 over direct",
        "sequential non-stream: added p99 over direct",
    ]
    assert doc["goals"][0]["note"].startswith("floor relay +")  # the stack's own share, same run


@pytest.mark.timeout(180)
def test_memory_startup_and_plan_report_their_goal_rows(tmp_path: Path) -> None:
    mem = _run(
        "memory.py", "--streams", "20", "--hold", "0.5", "--duration", "2", "--soak-warmup", "1",
        "--interval", "0.2", tmp_path=tmp_path,
    )  # fmt: skip
    held = mem["results"]["open_streams"]
    assert held["opened"] == 20 and held["still_open_at_end"] == 20 and held["rss_mb_peak"] > 0
    assert mem["results"]["soak"]["calls"] > 0 and mem["results"]["soak"]["errors"] == 0
    assert [g["bound"] for g in mem["goals"]] == ["≤ 150 MB", "≤ 5 %"]
    start = _run("startup.py", "--runs", "1", "--help-runs", "1", tmp_path=tmp_path)
    assert start["serve_ready"]["runs"] == 1 and len(start["goals"]) == 2
    plan = _run(
        "plan.py", "--strategies", "priority,score", "--calls", "50", "--repeats", "1", tmp_path=tmp_path
    )
    assert set(plan["results"]) == {"priority", "priority (sticky pin)", "score", "score (sticky pin)"}
    assert all(r["candidates"] + r["skipped"] == 22 for r in plan["results"].values())


def test_issue21_goal_rows_and_the_bookkeeping_and_client_benches_run(tmp_path: Path) -> None:
    """Issue #21's rows come with their floor and LiteLLM notes; the in-process benches print every row."""
    doc = _run(
        "overhead.py", "--scenarios", "seq,seq:stream,c2,c2:stream:anthropic@m200", "--requests", "12",
        "--warmup", "2", "--with-floor", tmp_path=tmp_path,
    )  # fmt: skip
    rows = {g["goal"]: g for g in doc["goals"] if g["goal"].startswith("#21")}
    assert rows["#21 sequential non-stream: added p50"]["note"].startswith("floor relay +")
    assert "#21 sequential stream: added TTFT p50" in rows
    env = {**os.environ, "PYTHONPATH": str(BENCH.parent / "src")}
    for script, args, expected in (
        ("usage_cost.py", ["--calls", "200", "--repeat", "1"], "all five on:"),
        ("upstream_client.py", ["--requests", "50", "--rounds", "1"], "modelpool http1"),
    ):
        proc = subprocess.run(
            [sys.executable, str(BENCH / script), *args], cwd=BENCH, env=env, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
        assert proc.returncode == 0 and expected in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]
