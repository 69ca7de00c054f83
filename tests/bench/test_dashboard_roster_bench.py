"""Self-check of bench/dashboard_roster.py (issue #21): one page against the real `modelpool serve` and the
906-row `roster` sim preset in Debian's Chromium. No speed is asserted — only that the script finds all
906 rows, presses every fold control, and reports every figure and goal row RESULTS.md needs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
CHROMIUM = Path("/usr/bin/chromium")


def _require_browser() -> None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing = "the playwright package is not installed"
    else:
        missing = "" if CHROMIUM.exists() else f"{CHROMIUM} is missing"
    if missing:
        if os.environ.get("MODELPOOL_REQUIRE_BROWSER"):
            pytest.fail(missing)
        pytest.skip(missing)


@pytest.mark.timeout(240)
def test_roster_bench_reports_render_folds_and_api(tmp_path: Path) -> None:
    _require_browser()
    out = tmp_path / "roster.json"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(BENCH.parent / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    argv = [sys.executable, str(BENCH / "dashboard_roster.py"), "--runs", "1", "--api-calls", "1"]
    proc = subprocess.run(
        [*argv, "--json", str(out)], cwd=BENCH, env=env, capture_output=True, text=True, timeout=220
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    doc = orjson.loads(out.read_bytes())
    assert doc["api"]["rows"] == 906 and doc["api"]["bytes"] > 0
    (run,) = doc["runs"]
    assert run["render_ms"] > 0 and run["api_in_page_ms"] is not None
    folds = run["folds"]
    assert folds["collapse all"]["visible_rows"] == 0
    assert folds["expand all (906 rows shown)"]["visible_rows"] == 906
    assert folds["fold one channel (openrouter, 80 rows)"]["visible_rows"] == 906 - 80
    assert run["refresh"]["ms"] > 0 and run["refresh"]["TaskDuration"] > 0  # the served call was redrawn
    assert [g["bound"] for g in doc["goals"]] == ["≤ 1 s"] * 3
    assert all(g["met"] is not None for g in doc["goals"])
