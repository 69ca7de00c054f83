"""`modelpool serve --workers N`: several processes on one port, only with shared (redis) state."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from gateway_server import ADMIN_TOKEN
from modelpool.sim import FleetThread
from redis_server import RedisServer
from replicas import Replica, replica_config, wait_for

CLI = [sys.executable, "-m", "modelpool.cli.main"]


def test_workers_refuse_a_backend_that_does_not_share_state(tmp_path: Path, fleet3: FleetThread) -> None:
    for backend in ("sqlite", "memory"):
        cfg = replica_config(fleet3, "redis://127.0.0.1:1/0")
        cfg["state"] = {"backend": backend, "path": str(tmp_path / "state.db")}
        path = tmp_path / f"{backend}.yaml"
        path.write_text(json.dumps(cfg))
        argv = [*CLI, "serve", "--config", str(path), "--workers", "2"]
        res = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert res.returncode == 2
        assert "state.backend: redis" in res.stderr and backend in res.stderr
        assert not (tmp_path / "state.db").exists()  # refused before anything opened the file


def test_two_workers_share_one_port_and_one_state(
    tmp_path: Path, fleet3: FleetThread, redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))  # where the supervisor makes the prometheus multiprocess dir
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    server = Replica("w", replica_config(fleet3, redis_server.url), tmp_path, workers=2).start()
    try:
        seen: set[str] = set()
        close = {"connection": "close"}
        auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}

        def both_workers_answered() -> bool:
            # A new connection per request: the kernel spreads them over the workers' shared socket.
            r = httpx.get(f"{server.url}/readyz", headers={"connection": "close"})
            state = r.json()["state"]
            assert state["backend"] == "redis" and state["healthy"] is True
            seen.add(state["replica"])
            return len(seen) == 2

        wait_for(both_workers_answered, 30, "answers from two worker processes")
        assert [p.name for p in tmpdir.iterdir() if p.name.startswith("modelpool-metrics-")]
        calls = 8
        for i in range(calls):  # fresh connections: the calls land on both workers
            body = {"model": "m1", "messages": [{"role": "user", "content": f"call {i}"}]}
            assert (
                httpx.post(f"{server.url}/v1/chat/completions", json=body, headers=close).status_code == 200
            )

        def served_ok() -> float:
            # Any worker answers a scrape with every worker's counts (prometheus multiprocess mode).
            text = httpx.get(f"{server.url}/metrics", headers={**close, **auth}).text
            return sum(
                s.value
                for family in text_string_to_metric_families(text)
                for s in family.samples
                if s.name == "modelpool_attempts_total" and s.labels.get("kind") == "ok"
            )

        wait_for(lambda: served_ok() == calls, 15, "metrics summed over the workers")
    finally:
        server.stop()
    assert not [p for p in tmpdir.iterdir() if p.name.startswith("modelpool-metrics-")]  # removed at exit
