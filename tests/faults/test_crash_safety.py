"""Crash safety (issue #10, SQLite part of #7): `kill -9` of a real `modelpool serve` during traffic leaves
a readable SQLite database, and a restart finds every piece of state written before the last flush
interval — the quota rest, the sticky and operator pins, the dashboard setting and the roster switch."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import yaml

from gateway_server import ADMIN_TOKEN, free_port
from modelpool.sim import Fault, FleetSpec, FleetThread, SimModel, SimProvider

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
FLUSH_INTERVAL = 0.5  # SqliteBackend's default: a write is on disk at most this long after it happened


def fleet_spec() -> FleetSpec:
    fast = {"ttft": 0.002, "tps": 5000.0}
    return FleetSpec(
        [
            # alpha is out of credit: the first call rests it until tomorrow's reset hour (quota rest).
            SimProvider("alpha", models=[SimModel("m1", output_tokens=4)], faults=[Fault("quota")], **fast),
            SimProvider("beta", models=[SimModel("m1", output_tokens=4)], **fast),
            SimProvider("gamma", models=[SimModel("m1", output_tokens=4)], **fast),
        ]
    )


@contextmanager
def serve(config: Path, port: int, env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    cmd = [sys.executable, "-m", "modelpool.cli.main", "serve", "--config", str(config), "--port", str(port)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else "gateway exited"
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "gateway did not become ready"
            time.sleep(0.1)
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def chat(url: str, session: str) -> httpx.Response:
    body = {"model": "m1", "messages": [{"role": "user", "content": "hi"}]}
    return httpx.post(f"{url}/v1/chat/completions", json=body, headers={"x-session-id": session}, timeout=10)


class Traffic:
    """Calls back to back on fresh sessions until stopped; errors (the kill) end nothing but the call."""

    def __init__(self, url: str, prefix: str = "bulk") -> None:
        self.url = url
        self.prefix = prefix
        self.ok = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            n += 1
            try:
                self.ok += chat(self.url, f"{self.prefix}-{n}").status_code == 200
            except httpx.HTTPError:
                time.sleep(0.01)

    def __enter__(self) -> Traffic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(15)


def row(roster: dict[str, Any], key: str) -> dict[str, Any]:
    return next(r for r in roster["models"] if r["key"] == key)


def test_kill_9_during_traffic_keeps_the_database_readable_and_the_state_intact(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    db = state_dir / "state.db"
    env = {**os.environ, "MODELPOOL_STATE_DIR": str(state_dir)}
    with FleetThread(fleet_spec()) as ft:
        cfg = ft.to_config(
            server={"admin_token": ADMIN_TOKEN},
            state={"backend": "sqlite", "path": str(db)},
            pool={"strategy": "priority", "retry_backoff": "1ms", "sticky": True},
            holidays={"source": "bundled"},
        )
        config = tmp_path / "modelpool.yaml"
        config.write_text(yaml.safe_dump(cfg))
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        with serve(config, port, env) as proc:
            first = chat(url, "keeper")
            assert first.status_code == 200 and first.headers["x-modelpool-route"] == "beta/m1"
            admin = httpx.Client(base_url=url, headers=ADMIN, timeout=10)
            assert row(admin.get("/admin/models").json(), "alpha/m1")["state"] == "quota"
            assert admin.patch("/admin/settings", json={"pool.retries_per_route": 1}).status_code == 200
            switched = admin.post("/admin/models", json={"key": "gamma/m1", "enabled": False})
            assert switched.status_code == 200 and row(switched.json(), "gamma/m1")["on"] is False
            assert admin.post("/admin/pin", json={"pool": "m1", "route": "beta/m1"}).status_code == 200
            with Traffic(url) as traffic:
                time.sleep(FLUSH_INTERVAL * 4)  # everything above is now past its flush …
                assert traffic.ok > 0  # … and calls are in flight when the gateway dies
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(10)
            admin.close()

        # The file (with its write-ahead log) is a sound database, readable by any SQLite client.
        with sqlite3.connect(db) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            namespaces = {ns for (ns,) in conn.execute("SELECT DISTINCT ns FROM kv")}
        assert {"health", "pins", "dashboard"} <= namespaces

        alpha_calls = len(ft.calls("alpha"))
        with serve(config, port, env), httpx.Client(base_url=url, headers=ADMIN, timeout=10) as admin:
            roster = admin.get("/admin/models").json()
            alpha = row(roster, "alpha/m1")
            assert alpha["state"] == "quota" and alpha["rest_remaining"] > 3600  # the rest survived
            gamma = row(roster, "gamma/m1")
            assert gamma["on"] is False and gamma["reason"] == "manual"  # the roster switch survived
            settings = {s["key"]: s for s in admin.get("/admin/settings").json()["settings"]}
            assert settings["pool.retries_per_route"]["value"] == 1
            assert settings["pool.retries_per_route"]["layer"] == "dashboard"
            assert admin.get("/admin/pins").json()["pins"] == {"m1": "beta/m1"}
            assert admin.get("/admin/sessions/keeper").json()["pins"] == {"m1": "beta/m1"}
            # And the restarted gateway routes by it: alpha still rests, gamma is off, beta serves.
            again = chat(url, "keeper")
            assert again.status_code == 200 and again.headers["x-modelpool-route"] == "beta/m1"
            # Without the operator pin, a new conversation meets priority order: alpha rests, gamma is off.
            assert admin.post("/admin/pin", json={"pool": "m1", "clear": True}).status_code == 200
            assert chat(url, "newcomer").headers["x-modelpool-route"] == "beta/m1"
        assert len(ft.calls("alpha")) == alpha_calls  # the resting route was not asked again


def test_repeated_kills_mid_write_never_corrupt_the_database(tmp_path: Path) -> None:
    """Every call pins a new conversation, so the flush loop is writing whenever the kill lands."""
    state_dir = tmp_path / "state"
    db = state_dir / "state.db"
    env = {**os.environ, "MODELPOOL_STATE_DIR": str(state_dir)}
    rng = random.Random(7)
    with FleetThread(fleet_spec()) as ft:
        ft.set_faults("alpha", [])
        cfg = ft.to_config(
            server={"admin_token": ADMIN_TOKEN},
            state={"backend": "sqlite", "path": str(db)},
            pool={"strategy": "priority", "sticky": True},
            holidays={"source": "bundled"},
        )
        config = tmp_path / "modelpool.yaml"
        config.write_text(yaml.safe_dump(cfg))
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        kept: set[str] = set()
        for round_ in range(4):
            with serve(config, port, env) as proc:
                state = httpx.get(f"{url}/readyz", timeout=5).json()["state"]
                assert state["healthy"] and "recovered_from" not in state  # nothing was moved aside
                with Traffic(url, f"r{round_}a"), Traffic(url, f"r{round_}b"):
                    time.sleep(FLUSH_INTERVAL * 3 + rng.random())
                    os.kill(proc.pid, signal.SIGKILL)
                    proc.wait(10)
            with sqlite3.connect(db) as conn:
                assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
                pins = {key for (key,) in conn.execute("SELECT key FROM kv WHERE ns = 'pins'")}
            assert kept < pins  # each round added pins, and none of the earlier rounds' were lost
            kept = pins
