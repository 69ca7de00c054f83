"""Shared test helpers (a uniquely named module: every `conftest.py` is imported as `conftest`)."""

from __future__ import annotations

import subprocess
import time

import httpx

from gateway_server import ADMIN_TOKEN
from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider


def two_route_spec(**kw: object) -> FleetSpec:
    return FleetSpec(
        [
            SimProvider("alpha", models=[SimModel("m1", output_tokens=6)], ttft=0.005, tps=5000.0),
            SimProvider("beta", models=[SimModel("m1", output_tokens=6)], ttft=0.005, tps=5000.0),
        ],
        **kw,  # type: ignore[arg-type]
    )


def base_config(ft: FleetThread, **pool: object) -> dict[str, object]:
    cfg = ft.to_config()
    cfg["state"] = {"backend": "memory"}
    cfg["server"] = {"admin_token": ADMIN_TOKEN}
    cfg["pool"] = {"strategy": "priority", "retry_backoff": "1ms", **pool}
    cfg["holidays"] = {"source": "bundled"}  # tests never reach the internet for the calendar
    return cfg


def wait_ready(url: str, proc: subprocess.Popen[str], timeout: float = 30) -> bool:
    """Poll `url/readyz` until it answers 200 (True), or until the process exits or `timeout` passes."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.1)
