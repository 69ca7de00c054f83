"""Multiprocess metrics: with `PROMETHEUS_MULTIPROC_DIR` set (as `serve --workers N` does), every worker
writes its values to the shared directory and a scrape answered by any one of them sums them all.

Real processes: prometheus_client picks its file-backed values when it is imported, so each worker here is
a fresh interpreter with the variable set, like a spawned uvicorn worker."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

WORKER = """
import sys
from types import SimpleNamespace
from modelpool.config import load_config
from modelpool.protocols.errors import AttemptRecord
from modelpool.gateway import Gateway

gw = Gateway(load_config({"state": {"backend": "memory"}, "holidays": {"source": "bundled"}}), env={})
calls, mode = int(sys.argv[1]), sys.argv[2]
for _ in range(calls):
    trace = gw.observer.begin("anthropic", {})
    trace.status, trace.outcome = 404, "rejected"
    gw.observer.done(trace)
    # and one served call, switched from a failing route (attempt records as the walker keeps them)
    served = gw.observer.begin("openai", {})
    failure = AttemptRecord(route="q/m", kind="server", status=500)
    served.walker = SimpleNamespace(
        served=SimpleNamespace(key="p/m"), state=SimpleNamespace(attempts=[failure], switched_from="q/m")
    )
    served.up_start = served.up_end = served.t0
    gw.observer.done(served)
gw.observer.in_flight["p/m"] = calls  # attempts still open when the worker stops
if mode == "close":
    gw.observer.close()  # a clean shutdown takes its live gauges out of the sum
elif mode == "keep":
    gw.observer.flush()
elif mode == "scrape":
    sys.stdout.write(gw.observer.render().decode())
"""


def _worker(mp_dir: Path, calls: int, mode: str) -> str:
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(mp_dir)}
    res = subprocess.run(
        [sys.executable, "-c", WORKER, str(calls), mode], env=env, capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_workers_share_one_directory_and_a_scrape_sums_them(tmp_path: Path) -> None:
    mp_dir = tmp_path / "prom"
    mp_dir.mkdir()
    _worker(mp_dir, 2, "close")
    _worker(mp_dir, 3, "keep")
    text = _worker(mp_dir, 0, "scrape")
    samples = {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    rejected = frozenset({"dialect": "anthropic", "pool": "", "route": "", "outcome": "rejected"}.items())
    assert samples[("modelpool_requests_total", rejected)] == 5  # 2 + 3 from two processes
    assert samples[("modelpool_in_flight", frozenset({"route": "p/m"}.items()))] == 3  # the closed one left
    route = frozenset({"route": "p/m"}.items())
    assert samples[("modelpool_request_duration_seconds_count", route)] == 5
    assert samples[("modelpool_request_duration_seconds_bucket", route | {("le", "+Inf")})] == 5
    assert samples[("modelpool_request_duration_seconds_bucket", route | {("le", "0.1")})] == 5  # instant
    switch = frozenset({"from_route": "q/m", "to_route": "p/m", "kind": "server"}.items())
    assert samples[("modelpool_switches_total", switch)] == 5
    openai = frozenset({"dialect": "openai"}.items())
    assert samples[("modelpool_gateway_overhead_seconds_count", openai)] == 5
    # The scrape-time gauges of the answering worker ride along.
    assert samples[("modelpool_calendar_status", frozenset({"status": "bundled"}.items()))] == 1
    assert any(name.startswith("modelpool_") for name, _ in samples)
    assert len(list(mp_dir.iterdir())) >= 2  # values really went through the shared files
