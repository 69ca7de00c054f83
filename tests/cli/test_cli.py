"""The real `modelpool` CLI, as a user runs it (subprocesses), against a live gateway where needed."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

from gateway_server import ADMIN_TOKEN, GatewayServer, free_port
from modelpool.sim import FleetThread
from support import base_config, wait_ready

CLI = [sys.executable, "-m", "modelpool.cli.main"]


def run(
    *args: str, timeout: float = 60, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, env=env)


def test_help_lists_the_verbs() -> None:
    out = run("--help").stdout
    for verb in ("serve", "demo", "sim", "models", "status", "config"):
        assert verb in out


def test_config_check_prints_every_error_with_its_path(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "providers:\n  - {id: a, base_url: nope}\npool: {strategy: fastest-ever, max_attempts: 99}\n"
    )
    res = run("config", "check", str(bad))
    assert res.returncode == 1
    assert "providers[0].base_url" in res.stderr
    assert "pool.strategy" in res.stderr and "pool.max_attempts" in res.stderr
    res = run("config", "check", str(bad), "--json")
    assert json.loads(res.stdout)["valid"] is False
    good = tmp_path / "good.yaml"
    good.write_text("providers:\n  - {id: a, base_url: 'http://127.0.0.1:9/v1', models: [m1]}\n")
    res = run("config", "check", str(good), "--json")
    assert res.returncode == 0 and json.loads(res.stdout)["providers"] == ["a"]


def test_models_and_status_against_a_running_gateway(fleet: FleetThread) -> None:
    with GatewayServer(base_config(fleet)) as gw:
        args = ("--url", gw.url, "--token", ADMIN_TOKEN)
        models = json.loads(run("models", *args, "--json").stdout)
        assert [r["route"] for r in models["pools"][0]["routes"]] == ["alpha/m1", "beta/m1"]
        status = json.loads(run("status", *args, "--json").stdout)
        keys = {s["key"]: s for s in status["in_force"]}
        assert keys["pool.strategy"]["layer"] == "file" and keys["pool.strategy"]["value"] == "priority"
        assert keys["pool.sticky"]["layer"] == "default"
        human = run("status", *args)
        assert "in force right now" in human.stdout and "[file]" in human.stdout
        denied = run("status", "--url", gw.url, "--token", "wrong")
        assert denied.returncode == 1 and "401" in denied.stderr


def test_serve_refuses_a_public_bind_without_client_keys(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("providers: []\n")
    res = run("serve", "--config", str(cfg), "--host", "0.0.0.0", "--port", str(free_port()))
    assert res.returncode == 2 and "api_keys" in res.stderr


def test_serve_runs_and_generates_an_admin_token(fleet: FleetThread, tmp_path: Path) -> None:
    import os

    import httpx

    cfg = base_config(fleet)
    cfg["server"] = {}  # no admin token configured: one is generated into the state dir
    path = tmp_path / "modelpool.yaml"
    path.write_text(yaml.safe_dump(cfg))
    port = free_port()
    env = dict(os.environ)
    proc = subprocess.Popen(
        [*CLI, "serve", "--config", str(path), "--port", str(port)],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert wait_ready(f"http://127.0.0.1:{port}", proc, timeout=20)
        token = (Path(env["MODELPOOL_STATE_DIR"]) / "admin_token").read_text().strip()
        status = httpx.get(
            f"http://127.0.0.1:{port}/admin/status", headers={"Authorization": f"Bearer {token}"}, timeout=5
        )
        assert status.status_code == 200
        reply = httpx.post(
            f"http://127.0.0.1:{port}/v1/chat/completions",
            json={"model": "m1", "messages": [{"role": "user", "content": "x"}]},
            timeout=10,
        )
        assert reply.status_code == 200
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=15)
    assert token in err  # printed once, on first run


def test_demo_runs_with_no_keys_and_serves_traffic() -> None:
    res = run("demo", "--port", str(free_port()), "--duration", "6", "--rate", "4", timeout=90)
    assert res.returncode == 0, res.stderr
    last = [line for line in res.stdout.splitlines() if "traffic:" in line][-1]
    sent, ok = map(int, re.findall(r"(\d+) sent, (\d+) ok", last)[0])
    assert sent > 5 and ok == sent
    assert "0 failed" in last


def test_pin_and_probe_against_a_running_gateway(fleet: FleetThread) -> None:
    with GatewayServer(base_config(fleet)) as gw:
        args = ("--url", gw.url, "--token", ADMIN_TOKEN)
        pinned = run("pin", "beta/m1", *args)
        assert pinned.returncode == 0 and "beta/m1" in pinned.stdout
        import httpx

        reply = httpx.post(
            gw.url + "/v1/chat/completions",
            json={"model": "m1", "messages": [{"role": "user", "content": "x"}]},
            timeout=10,
        )
        assert reply.headers["x-modelpool-route"] == "beta/m1"  # the pin heads the priority order
        cleared = run("pin", "--clear", "--pool", "m1", *args)
        assert cleared.returncode == 0 and "cleared" in cleared.stdout
        probe = json.loads(run("probe", "m1", *args, "--json").stdout)
        assert {r["route"] for r in probe["results"]} == {"alpha/m1", "beta/m1"}
        assert all(r["ok"] for r in probe["results"]) and probe["spent"]["requests"] == 2
        human = run("probe", *args)
        assert "spent: 2 requests" in human.stdout


def test_period_and_calendar_work_without_a_gateway(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("providers: []\nholidays: {source: bundled}\n")
    res = run("period", "--config", str(cfg), "--at", "2026-11-27T19:00:00+08:00", "--json")
    report = json.loads(res.stdout)
    assert report["period"] == "idle" and report["next_flip"].startswith("2026-11-30T09:00")
    res = run("period", "--config", str(cfg), "--at", "2026-10-01T10:00:00+08:00")
    assert "国庆节" in res.stdout
    cal = json.loads(
        run("calendar", "--config", str(cfg), "--url", f"http://127.0.0.1:{free_port()}", "--json").stdout
    )
    assert cal["year"] >= 2026 and cal["served_by"].startswith("local cache")
