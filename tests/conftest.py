"""Shared fixtures: the simulated fleet in its own thread, the real gateway server in another."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # tests/gateway_server.py and tests/support.py

from llama_server import LlamaServer
from modelpool.sim import FleetThread
from support import base_config, two_route_spec

__all__ = ["base_config", "two_route_spec"]


@pytest.fixture(autouse=True)
def _isolated_state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never touch the developer's ~/.local/state or ~/.config."""
    monkeypatch.setenv("MODELPOOL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("MODELPOOL_CONFIG", raising=False)


@pytest.fixture
def fleet() -> Iterator[FleetThread]:
    with FleetThread(two_route_spec()) as ft:
        yield ft


@pytest.fixture
def clean_env() -> dict[str, str]:
    """An environment without provider keys, so auto-detection finds nothing unexpected."""
    return {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}


@pytest.fixture(scope="session")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """One real llama-server (SmolLM2-135M, 2 slots of 2,048 tokens) for the session; see llama_server.py."""
    server = LlamaServer(tmp_path_factory.mktemp("llama")).start()
    try:
        yield server
    finally:
        server.stop()
