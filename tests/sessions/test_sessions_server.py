"""Per-session call history through the real server (SPEC §8, issue #26): each call of a session with its
route, attempts, switches, tokens, cost, TTFT, latency and outcome in `GET /admin/sessions/{id}`, the
Sessions list with calls and cost so far, the retention limits from config, a restart on sqlite, and the
`modelpool sessions` CLI verb against the running server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai import OpenAI

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import Fault, FleetThread
from support import base_config

PRICES = {"input": 2.0, "output": 8.0}


def priced(ft: FleetThread, **extra: Any) -> dict[str, Any]:
    cfg = base_config(ft)
    for p in cfg["providers"]:  # type: ignore[union-attr]
        p["prices"] = PRICES
    cfg.update(extra)
    return cfg


def admin(gw: GatewayServer, path: str, status: int = 200) -> Any:
    r = httpx.get(gw.url + path, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=15)
    assert r.status_code == status, r.text
    return r.json()


def chat(gw: GatewayServer, session: str, stream: bool = False, text: str = "hi") -> None:
    client = OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
    msgs = [{"role": "user", "content": text}]
    if stream:
        for _ in client.chat.completions.create(
            model="m1",
            messages=msgs,
            stream=True,
            stream_options={"include_usage": True},  # the client asks: usage on any branch of #26
            extra_headers={"x-session-id": session},  # type: ignore[arg-type]
        ):
            pass
    else:
        client.chat.completions.create(model="m1", messages=msgs, extra_headers={"x-session-id": session})  # type: ignore[arg-type]
    client.close()


def test_a_sessions_calls_with_route_switch_tokens_cost_and_timings(fleet: FleetThread) -> None:
    fleet.set_faults("alpha", [Fault("server_error", status=503, times=3)])  # the first call switches
    with GatewayServer(priced(fleet, pool={"strategy": "priority", "retry_backoff": "1ms",
                                           "retries_per_route": 2, "sticky": False})) as gw:  # fmt: skip
        chat(gw, "run-1")
        chat(gw, "run-1", stream=True)
        chat(gw, "other")
        one = admin(gw, "/admin/sessions/run-1")
        listed = admin(gw, "/admin/sessions")["sessions"]
        assert admin(gw, "/admin/sessions/nobody", status=404)["error"]["type"] == "not_found_error"
    first, second = one["calls"]
    assert first["route"] == "beta/m1" and first["outcome"] == "ok" and not first["stream"]
    assert [a["route"] for a in first["attempts"]] == ["alpha/m1"] * 3 + ["beta/m1"]
    assert [a["kind"] for a in first["attempts"]] == ["server"] * 3 + [None]
    assert first["switches"] == [{"from": "alpha/m1", "to": "beta/m1", "kind": "server"}]
    assert first["ttft_ms"] is None and first["latency_ms"] > 0  # TTFT: streams only
    # alpha rests after its failures: the next calls go straight to beta
    assert second["route"] == "beta/m1" and second["stream"] and second["ttft_ms"] > 0
    assert second["switches"] == [] and second["attempts"] == [
        {"route": "beta/m1", "kind": None, "status": 200}
    ]
    for c in (first, second):
        assert c["tokens_in"] > 0 and c["tokens_out"] == 6, c
        assert c["cost_usd"] == pytest.approx((c["tokens_in"] * 2.0 + 6 * 8.0) / 1e6), c
        assert c["pool"] == "m1" and c["model"] == "m1" and c["dialect"] == "openai" and c["request_id"]
    assert first["at"] <= second["at"]
    s = one["summary"]
    assert s["calls"] == 2 and s["failed"] == 0 and s["tokens_out"] == 12
    assert s["cost_usd"] == pytest.approx(first["cost_usd"] + second["cost_usd"])
    assert one["live_route"]["route"] == "beta/m1"
    rows = {r["session"]: r for r in listed}
    assert [r["session"] for r in listed] == ["other", "run-1"]  # most recently active first
    assert rows["run-1"]["calls"] == 2 and rows["run-1"]["cost_usd"] == pytest.approx(s["cost_usd"])
    assert rows["other"]["calls"] == 1 and rows["other"]["route"] == "beta/m1"


def test_a_forced_route_call_is_listed_under_the_pool_named(fleet: FleetThread) -> None:
    """`x-modelpool-route` picks the route; the session's call is still the named pool's (as in the usage
    books, SPEC §14), with the forced route as the one that served."""
    with GatewayServer(priced(fleet)) as gw:
        client = OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
        headers = {"x-session-id": "forced", "x-modelpool-route": "beta/m1"}
        client.chat.completions.create(
            model="m1",
            messages=[{"role": "user", "content": "hi"}],
            extra_headers=headers,  # type: ignore[arg-type]
        )
        client.close()
        one = admin(gw, "/admin/sessions/forced")
    (call,) = one["calls"]
    assert call["pool"] == "m1" and call["model"] == "m1" and call["route"] == "beta/m1", call
    assert one["live_route"]["pool"] == "m1" and one["live_route"]["route"] == "beta/m1", one["live_route"]


def test_a_failed_call_is_in_its_sessions_history(fleet: FleetThread) -> None:
    fleet.set_faults("alpha", [Fault("server_error", status=503)])
    fleet.set_faults("beta", [Fault("server_error", status=503)])
    with GatewayServer(priced(fleet, pool={"retry_backoff": "1ms", "retries_per_route": 0})) as gw:
        with pytest.raises(openai.InternalServerError):
            chat(gw, "doomed")
        one = admin(gw, "/admin/sessions/doomed")
        listed = admin(gw, "/admin/sessions")["sessions"]
    (call,) = one["calls"]
    assert call["outcome"] == "failed" and call["route"] is None and call["status"] >= 500
    assert [a["kind"] for a in call["attempts"]] == ["server", "server"]
    assert one["live_route"] is None and one["summary"]["failed"] == 1
    assert [r["session"] for r in listed] == ["doomed"]  # no live route, still listed from its history


def test_retention_limits_from_config_hold_through_the_server(fleet: FleetThread) -> None:
    cfg = priced(fleet, sessions={"calls_kept": 3, "kept": 2, "ttl": "1h"})
    with GatewayServer(cfg) as gw:
        for i in range(5):
            chat(gw, "long", text=f"call {i}")
        chat(gw, "second")
        chat(gw, "third")  # a third session: the least recently active (`long`) goes
        gone = admin(gw, "/admin/sessions/long")  # its sticky pin is still there: the session is known
        third = admin(gw, "/admin/sessions/third")
        listed = [r["session"] for r in admin(gw, "/admin/sessions")["sessions"]]
        for i in range(5):
            chat(gw, "third", text=f"more {i}")
        third = admin(gw, "/admin/sessions/third")
        in_force = {r["key"]: r for r in admin(gw, "/admin/status")["in_force"]}
        unauthorized = httpx.get(gw.url + "/admin/sessions/third", timeout=15)
    assert (
        in_force["sessions.calls_kept"]["value"] == 3 and in_force["sessions.calls_kept"]["layer"] == "file"
    )
    assert in_force["sessions.ttl"]["value"] == 3600.0 and in_force["sessions.kept"]["value"] == 2
    assert unauthorized.status_code == 401  # a session's calls are behind the admin token
    assert gone["summary"] is None and gone["calls"] == [] and gone["live_route"] is None
    assert listed == ["third", "second"]
    assert len(third["calls"]) == 3 and third["summary"]["calls"] == 6 and third["calls_kept"] == 3


def test_history_survives_a_restart_on_sqlite_and_the_cli_reads_it(
    fleet: FleetThread, tmp_path: Path
) -> None:
    cfg = priced(fleet, state={"backend": "sqlite", "path": str(tmp_path / "state.db")})
    with GatewayServer(cfg) as gw:
        chat(gw, "kept-over-restart")
        chat(gw, "kept-over-restart", stream=True)
    with GatewayServer(cfg) as gw:
        one = admin(gw, "/admin/sessions/kept-over-restart")
        listed = admin(gw, "/admin/sessions")["sessions"]
        cli = [
            sys.executable,
            "-m",
            "modelpool.cli.main",
            "sessions",
            "--url",
            gw.url,
            "--token",
            ADMIN_TOKEN,
        ]
        as_json = subprocess.run(
            [*cli, "kept-over-restart", "--json"], capture_output=True, text=True, timeout=60
        )
        table = subprocess.run([*cli, "kept-over-restart"], capture_output=True, text=True, timeout=60,
                               env={**os.environ, "COLUMNS": "200"})  # fmt: skip
        listing = subprocess.run(
            cli, capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "200"}
        )
    assert len(one["calls"]) == 2 and one["live_route"] is None  # the live route is per process
    assert listed[0]["session"] == "kept-over-restart" and listed[0]["calls"] == 2
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["calls"] == one["calls"]
    assert table.returncode == 0, table.stderr
    assert "kept-over-restart" in table.stdout and "alpha/m1" in table.stdout and "2 calls" in table.stdout
    assert listing.returncode == 0 and "kept-over-restart" in listing.stdout, listing.stderr


def test_a_hedged_call_names_its_hedge_in_the_history(fleet: FleetThread) -> None:
    fleet.set_faults("alpha", [Fault("stall", delay=3.0, times=1)])  # alpha silent before its first byte
    hedge = {"enabled": True, "after": "200ms", "budget": "100%"}
    with GatewayServer(priced(fleet, pool={"strategy": "priority", "hedge": hedge})) as gw:
        chat(gw, "raced", stream=True)
        one = admin(gw, "/admin/sessions/raced")
    (call,) = one["calls"]
    assert call["route"] == "beta/m1" and call["outcome"] == "ok"
    assert call["hedged"] == "alpha/m1 → beta/m1", call
    assert call["ttft_ms"] is not None
