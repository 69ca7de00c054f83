"""Shared fixtures: the simulated fleet in its own thread, the real gateway server in another."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # tests/gateway_server.py and friends

from gateway_server import ADMIN_TOKEN
from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider


@pytest.fixture(autouse=True)
def _isolated_state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never touch the developer's ~/.local/state or ~/.config."""
    monkeypatch.setenv("MODELPOOL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("MODELPOOL_CONFIG", raising=False)


def two_route_spec(**kw: object) -> FleetSpec:
    return FleetSpec(
        [
            SimProvider("alpha", models=[SimModel("m1", output_tokens=6)], ttft=0.005, tps=5000.0),
            SimProvider("beta", models=[SimModel("m1", output_tokens=6)], ttft=0.005, tps=5000.0),
        ],
        **kw,  # type: ignore[arg-type]
    )


@pytest.fixture
def fleet() -> Iterator[FleetThread]:
    with FleetThread(two_route_spec()) as ft:
        yield ft


def base_config(ft: FleetThread, **pool: object) -> dict[str, object]:
    cfg = ft.to_config()
    cfg["state"] = {"backend": "memory"}
    cfg["server"] = {"admin_token": ADMIN_TOKEN}
    cfg["pool"] = {"strategy": "priority", "retry_backoff": "1ms", **pool}
    return cfg


@pytest.fixture
def clean_env() -> dict[str, str]:
    """An environment without provider keys, so auto-detection finds nothing unexpected."""
    return {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
