"""`$MODELPOOL_STATE_DIR` holds all of a gateway's state, the sqlite file included (tests and containers
must never write into the user's ~/.local/state)."""

from __future__ import annotations

import os
from pathlib import Path

import httpx

from gateway_server import GatewayServer
from modelpool.sim import FleetThread
from support import base_config


def test_the_sqlite_file_lives_in_the_state_dir(fleet: FleetThread) -> None:
    state_dir = Path(os.environ["MODELPOOL_STATE_DIR"])  # set per test by conftest
    cfg = base_config(fleet)
    cfg["state"] = {"backend": "sqlite"}  # default path: ~/.local/state/modelpool/state.db
    with GatewayServer(cfg) as gw:
        status = httpx.get(gw.url + "/admin/status", headers=gw.admin_headers(), timeout=10).json()
    assert status["state"]["path"] == str(state_dir / "state.db")
    assert (state_dir / "state.db").is_file()
