"""A short run of bench/soak.py (the 10-minute soak's CI stand-in): the real CLI gateway over the real
simulated fleet with ~20 % injected faults, judged call by call by the soak's own client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SOAK = Path(__file__).resolve().parents[2] / "bench" / "soak.py"


@pytest.mark.timeout(240)
def test_a_short_soak_loses_duplicates_and_hangs_nothing(tmp_path: Path) -> None:
    out = tmp_path / "soak.json"
    duration = os.environ.get("MODELPOOL_SOAK_SECONDS", "20")
    res = subprocess.run(
        [sys.executable, str(SOAK), "--duration", duration, "--clients", "4", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=220,
    )
    assert out.exists(), res.stdout[-2000:] + res.stderr[-2000:]
    summary = json.loads(out.read_text())["summary"]
    verdicts = summary["verdicts"]
    assert verdicts["lost"] == verdicts["hung"] == verdicts["duplicated"] == verdicts["truncated"] == 0, (
        summary["problems"]
    )
    assert res.returncode == 0, res.stdout[-2000:]
    # The run was a real soak: faults really hit the upstream calls, and both answers and clear errors
    # came back in every dialect, streamed and not.
    assert summary["upstream"]["rate"] > 0.1
    assert verdicts["answer"] > 50
    assert len(summary["by_kind"]) == 6
    assert summary["rss"]["samples"]
