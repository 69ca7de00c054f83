"""Quota rests (SPEC §5) with an injected clock: visible in `status`, lasting to the next day at
`quota_reset_hour`, and surviving a restart on the sqlite state backend."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import orjson
import pytest
from routing_helpers import MODEL, FakeClock, admin, ask, config, route_row

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import Fault, FleetThread, expected_text

ZONE = ZoneInfo("Asia/Shanghai")
HOUR = 3600.0


def at(*args: int) -> float:
    return datetime(*args, tzinfo=ZONE).timestamp()  # type: ignore[misc]


@pytest.fixture(autouse=True)
def _local_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rests are computed in the machine's zone; pin it so the reset hour means the same everywhere."""
    monkeypatch.setenv("TZ", "Asia/Shanghai")


def rest_config(ft: FleetThread, db: Path, **pool: Any) -> dict[str, Any]:
    state = {"backend": "sqlite", "path": str(db)}
    return config(ft, state=state, quota_reset_hour=3, quota_cooldown="1h", **pool)


def stored_health(db: Path) -> dict[str, Any]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT key, value FROM kv WHERE ns = 'health'").fetchall()
    return {key: orjson.loads(value) for key, value in rows}


def test_a_quota_rest_lasts_to_the_reset_hour_of_the_next_day(fleet: FleetThread, tmp_path: Path) -> None:
    fleet.set_faults("alpha", [Fault("quota", times=1)])  # alpha would answer again after its wall
    clock = FakeClock(at(2025, 3, 10, 14, 0))
    with GatewayServer(rest_config(fleet, tmp_path / "state.db"), clock=clock) as gw:
        assert ask(gw).headers["x-modelpool-switched"] == "alpha/m1 → beta/m1 (quota)"
        alpha = route_row(gw, "alpha/m1")
        assert (alpha["state"], alpha["mark"], alpha["last_error_kind"]) == (
            "unavailable",
            "QUOTA-REST",
            "quota",
        )
        assert alpha["rest_remaining"] == 13 * HOUR  # 14:00 → 03:00 the next day
        pool_row = admin(gw, "/admin/pools")["pools"][0]["routes"][0]
        assert (pool_row["route"], pool_row["mark"]) == ("alpha/m1", "QUOTA-REST")
        # people read it in `modelpool status` too
        env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
        human = subprocess.run(
            [sys.executable, "-m", "modelpool.cli.main", "status", "--url", gw.url, "--token", ADMIN_TOKEN],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        ).stdout
        assert "QUOTA-REST 13.0h" in human

        clock.now = at(2025, 3, 11, 2, 59)  # one minute before the reset hour: still resting
        assert route_row(gw, "alpha/m1")["rest_remaining"] == 60
        assert ask(gw, session="late").route == "beta/m1"
        assert len(fleet.calls("alpha")) == 1  # not even tried

        clock.now = at(2025, 3, 11, 3, 0, 1)
        assert route_row(gw, "alpha/m1")["mark"] is None
        reply = ask(gw, session="morning")
        assert reply.route == "alpha/m1" and reply.text == expected_text("alpha", MODEL, 6)
        assert route_row(gw, "alpha/m1")["state"] == "ok"


def test_a_quota_rest_survives_a_restart(fleet: FleetThread, tmp_path: Path) -> None:
    fleet.set_faults("alpha", [Fault("quota", times=1)])
    db = tmp_path / "state.db"
    clock = FakeClock(at(2025, 3, 10, 14, 0))
    with GatewayServer(rest_config(fleet, db), clock=clock) as gw:
        assert ask(gw).route == "beta/m1"
    # the first gateway flushed its batched writes on shutdown
    stored = stored_health(db)["alpha/m1"]
    assert stored["last_error_kind"] == "quota" and stored["rest_until"] == at(2025, 3, 11, 3, 0)

    clock.advance(2 * HOUR)
    with GatewayServer(rest_config(fleet, db), clock=clock) as gw:
        alpha = route_row(gw, "alpha/m1")
        assert (alpha["mark"], alpha["rest_remaining"], alpha["failures"]) == ("QUOTA-REST", 11 * HOUR, 1)
        assert ask(gw).route == "beta/m1"
        assert len(fleet.calls("alpha")) == 1
        clock.now = at(2025, 3, 11, 3, 0, 1)
        assert ask(gw, session="morning").route == "alpha/m1"


def test_a_quota_rest_longer_than_persist_ttl_still_survives_a_restart(
    fleet: FleetThread, tmp_path: Path
) -> None:
    """A wall hit at 00:30 with reset hour 23 rests until 23:00 the next day (46.5 h), longer than the
    default 24 h `persist_ttl`: the stored rest must not be forgotten while it is still in force."""
    fleet.set_faults("alpha", [Fault("quota", times=1)])
    db = tmp_path / "state.db"
    clock = FakeClock(at(2025, 3, 10, 0, 30))
    cfg = rest_config(fleet, db)
    cfg["pool"]["quota_reset_hour"] = 23
    with GatewayServer(cfg, clock=clock) as gw:
        assert ask(gw).route == "beta/m1"
        assert route_row(gw, "alpha/m1")["rest_remaining"] == 46.5 * HOUR
    clock.now = at(2025, 3, 11, 6, 30)  # 30 h later: past persist_ttl, 16.5 h before the reset
    with GatewayServer(cfg, clock=clock) as gw:
        alpha = route_row(gw, "alpha/m1")
        assert (alpha["mark"], alpha["rest_remaining"]) == ("QUOTA-REST", 16.5 * HOUR)
        assert ask(gw).route == "beta/m1"
    assert len(fleet.calls("alpha")) == 1
