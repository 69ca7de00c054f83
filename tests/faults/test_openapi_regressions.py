"""The 5xx the admin-API fuzzing found, pinned: each was a 500 before its fix and is a 400 now."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from gateway_server import GatewayServer
from modelpool.sim import FleetThread
from support import base_config, two_route_spec


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with (
        FleetThread(two_route_spec()) as ft,
        GatewayServer(base_config(ft)) as gw,
        httpx.Client(base_url=gw.url, headers=gw.admin_headers(), timeout=10) as c,
    ):
        yield c


@pytest.mark.parametrize("model", [False, 0, [], {"a": 1}])
def test_ranking_refresh_with_a_non_string_model_is_400(client: httpx.Client, model: object) -> None:
    resp = client.post("/admin/ranking/refresh", json={"model": model})
    assert resp.status_code == 400, resp.text
    assert "'model' must be a string" in resp.json()["error"]["message"]


@pytest.mark.parametrize(
    "at",
    ["0001-01-01", "0001-01-01T00:00:00+23:59", "9999-12-31T23:59:59-23:59", "9999-12-31T23:00:00+00:00"],
)
def test_period_at_the_ends_of_the_calendar_is_400(client: httpx.Client, at: str) -> None:
    resp = client.get("/admin/period", params={"at": at})
    assert resp.status_code == 400, resp.text
    assert "outside the supported date range" in resp.json()["error"]["message"]


def test_period_inside_the_range_still_answers(client: httpx.Client) -> None:
    resp = client.get("/admin/period", params={"at": "2026-10-01T10:00:00+08:00"})
    assert resp.status_code == 200 and resp.json()["period"] == "idle"  # National Day: a statutory holiday


def test_the_period_cli_says_so_too_instead_of_a_traceback(tmp_path: Path) -> None:
    config = tmp_path / "modelpool.yaml"
    config.write_text("providers: []\nholidays: {source: bundled}\n")
    cli = [sys.executable, "-m", "modelpool.cli.main"]
    cmd = [*cli, "period", "--at", "0001-01-01", "--config", str(config)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "outside the supported date range" in res.stderr
    assert "Traceback" not in res.stderr
