"""Real `modelpool serve` processes for the scale-out tests: replicas sharing one Redis."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from openai import OpenAI

from gateway_server import ADMIN_TOKEN
from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider
from redis_server import free_port

POOL = "m1"


def three_route_spec() -> FleetSpec:
    return FleetSpec(
        [
            SimProvider(pid, models=[SimModel("m1", output_tokens=6)], ttft=0.002, tps=5000.0)
            for pid in ("alpha", "beta", "gamma")
        ]
    )


def replica_config(ft: FleetThread, redis_url: str, **pool: Any) -> dict[str, Any]:
    cfg = ft.to_config()
    cfg["state"] = {"backend": "redis", "redis_url": redis_url, "redis_prefix": "scale"}
    cfg["server"] = {"admin_token": ADMIN_TOKEN}
    cfg["pool"] = {"strategy": "priority", "retry_backoff": "1ms", **pool}
    cfg["holidays"] = {"source": "bundled"}
    return cfg


class Replica:
    """One `modelpool serve --config FILE --port P` process (the real CLI)."""

    def __init__(self, name: str, config: dict[str, Any], workdir: Path, workers: int = 1) -> None:
        self.name = name
        self.dir = workdir / name
        self.dir.mkdir(parents=True, exist_ok=True)
        self.config_path = self.dir / "modelpool.yaml"
        self.config_path.write_text(json.dumps(config))  # JSON is YAML
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.workers = workers
        self.proc: subprocess.Popen[bytes] | None = None
        self.http = httpx.Client(base_url=self.url, timeout=30)
        self.client = OpenAI(base_url=self.url + "/v1", api_key="unused", max_retries=0, timeout=30)

    def start(self, timeout: float = 60.0) -> Replica:
        cmd = [sys.executable, "-m", "modelpool.cli.main", "serve", "--config", str(self.config_path)]
        cmd += ["--port", str(self.port), "--log-level", "warning"]
        if self.workers > 1:
            cmd += ["--workers", str(self.workers)]
        env = {**os.environ, "MODELPOOL_STATE_DIR": str(self.dir / "state")}
        self.log = open(self.dir / "serve.log", "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited:\n{self.logs()}")
            try:
                if self.http.get("/readyz").status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"{self.name} did not become ready:\n{self.logs()}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None
        self.http.close()
        self.client.close()
        self.log.close()

    def logs(self) -> str:
        return (self.dir / "serve.log").read_text(errors="replace")[-3000:]

    # ---- calls ---------------------------------------------------------------------------------

    def chat(self, session: str | None = None, text: str = "hi") -> str:
        """One call with the official SDK; returns the route that served it."""
        headers = {"x-session-id": session} if session else {}
        raw = self.client.chat.completions.with_raw_response.create(
            model=POOL, messages=[{"role": "user", "content": text}], extra_headers=headers
        )
        raw.parse()
        return raw.headers["x-modelpool-route"]

    def admin(self, method: str, path: str, body: Any = None) -> Any:
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        r = self.http.request(method, path, headers=headers, json=body)
        r.raise_for_status()
        return r.json()

    def route_state(self, route: str) -> str:
        rows = self.admin("GET", "/admin/models")["models"]
        return next(row["state"] for row in rows if row["key"] == route)

    def readyz(self) -> dict[str, Any]:
        r = self.http.get("/readyz")
        assert r.status_code == 200  # degraded state still serves
        data: dict[str, Any] = r.json()
        return data


def wait_for(cond: Any, timeout: float = 10.0, what: str = "condition") -> None:
    """Convergence wait; the bound only keeps a broken build from hanging (not a timing assertion)."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout}s")
        time.sleep(0.02)
