"""Every CLI verb of SPEC §1.3 as a user runs it: the installed entry point (`python -m modelpool`) in a
subprocess, `--json` parsed, against a live `modelpool serve` over the simulated fleet and offline.

The admin token is never passed on the command line here: `modelpool serve` generates it into the state
dir, and the verbs find it there through `$MODELPOOL_CONFIG` (SPEC §1.3: "token from env or state dir").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

import modelpool
from gateway_server import free_port
from modelpool.sim import FleetSpec, FleetThread, InnerProvider, SimModel, SimProvider

CLI = [sys.executable, "-m", "modelpool"]
AGG_MODEL = "deepseek/deepseek-v4.1-flash-1017"


def cli(*args: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, env=env)


def cli_json(*args: str, env: dict[str, str]) -> Any:
    res = cli(*args, "--json", env=env)
    assert res.returncode == 0, (args, res.stderr)
    return json.loads(res.stdout)


@pytest.fixture
def fleet() -> Iterator[FleetThread]:
    inner = [InnerProvider("slow", tps=40.0), InnerProvider("quick", tps=400.0)]
    spec = FleetSpec(
        [
            SimProvider("alpha", models=[SimModel("m1", output_tokens=4)], ttft=0.002, tps=5000.0),
            SimProvider("beta", models=[SimModel("m1", output_tokens=4)], ttft=0.002, tps=5000.0),
            SimProvider("vercel", kind="vercel", models=[SimModel(AGG_MODEL, output_tokens=4)], inner=inner),
        ]
    )
    with FleetThread(spec) as ft:
        yield ft


@pytest.fixture
def config_file(fleet: FleetThread, tmp_path: Path) -> Path:
    cfg = fleet.to_config(
        pool={"strategy": "priority", "retry_backoff": "1ms"},
        state={"backend": "memory"},
        holidays={"source": "bundled"},
    )
    path = tmp_path / "modelpool.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _env(config: Path, url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "MODELPOOL_ADMIN_TOKEN"}
    return env | {"MODELPOOL_CONFIG": str(config), "MODELPOOL_URL": url}


@pytest.fixture
def served(config_file: Path) -> Iterator[dict[str, str]]:
    """`modelpool serve` as a subprocess; yields the env the verbs run with (URL + config, no token)."""
    port = free_port()
    env = _env(config_file, f"http://127.0.0.1:{port}")
    proc = subprocess.Popen([*CLI, "serve", "--port", str(port)], env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{env['MODELPOOL_URL']}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "serve did not come up"
            time.sleep(0.1)
        yield env
    finally:
        proc.terminate()
        proc.communicate(timeout=15)


def test_every_live_verb_answers_json_from_a_running_gateway(served: dict[str, str]) -> None:
    env = served
    models = cli_json("models", env=env)
    pools = {p["id"]: [r["route"] for r in p["routes"]] for p in models["pools"]}
    assert pools["m1"] == ["alpha/m1", "beta/m1"]

    status = cli_json("status", env=env)
    in_force = {s["key"]: s["layer"] for s in status["in_force"]}
    assert in_force["pool.strategy"] == "file" and in_force["pool.sticky"] == "default"
    human = cli("status", env=env).stdout
    assert "in force right now" in human and "pool.strategy" in human and "[file]" in human
    # A dashboard edit shows up as its own layer (the token is the one serve wrote into the state dir).
    token = (Path(os.environ["MODELPOOL_STATE_DIR"]) / "admin_token").read_text().strip()
    patched = httpx.patch(
        env["MODELPOOL_URL"] + "/admin/settings",
        json={"pool.sticky": False},
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    assert patched.status_code == 200, patched.text
    in_force = {s["key"]: s for s in cli_json("status", env=env)["in_force"]}
    assert in_force["pool.sticky"]["layer"] == "dashboard" and in_force["pool.sticky"]["value"] is False
    assert "[dashboard]" in cli("status", env=env).stdout

    pinned = cli_json("pin", "beta/m1", env=env)
    assert pinned["route"] == "beta/m1" and pinned["pool"] == "m1"
    reply = httpx.post(
        env["MODELPOOL_URL"] + "/v1/chat/completions",
        json={"model": "m1", "messages": [{"role": "user", "content": "x"}]},
        timeout=10,
    )
    assert reply.headers["x-modelpool-route"] == "beta/m1"
    assert cli_json("pin", "--clear", "--pool", "m1", env=env)["pool"] == "m1"

    probe = cli_json("probe", "m1", env=env)
    assert sorted(r["route"] for r in probe["results"]) == ["alpha/m1", "beta/m1"]
    assert probe["spent"]["requests"] == 2

    rank = cli_json("rank", AGG_MODEL, env=env)
    assert rank["available"] is True and rank["order"] == ["quick", "slow"]

    calendar = cli_json("calendar", env=env)
    assert "served_by" not in calendar or not calendar["served_by"].startswith("local cache")
    assert calendar["year"] >= 2026
    synced = cli_json("calendar", "sync", env=env)
    assert synced["year"] == calendar["year"]

    period = cli_json("period", "--at", "2026-12-01T10:00:00+08:00", env=env)
    assert period["period"] == "peak"
    check = cli_json("config", "check", env=env)  # $MODELPOOL_CONFIG
    assert check["valid"] is True and check["providers"] == ["alpha", "beta", "vercel"]


def test_offline_verbs_work_and_live_verbs_say_no_gateway_answers(config_file: Path) -> None:
    env = _env(config_file, f"http://127.0.0.1:{free_port()}")  # nothing listens there
    rank = cli_json("rank", AGG_MODEL, env=env)  # straight from the aggregator's public stats
    assert rank["available"] is True and rank["order"] == ["quick", "slow"]
    assert "quick" in cli("rank", AGG_MODEL, env=env).stdout
    period = cli_json("period", "--at", "2026-10-01T10:00:00+08:00", env=env)
    assert period["period"] == "idle"
    calendar = cli_json("calendar", env=env)
    assert calendar["served_by"].startswith("local cache")
    assert cli_json("config", "check", str(config_file), env=env)["valid"] is True
    for verb in (["models"], ["status"], ["probe"], ["pin", "beta/m1"]):
        res = cli(*verb, "--json", env=env)
        assert res.returncode == 1 and "cannot reach the gateway" in res.stderr, verb
        assert res.stdout == ""


def test_version_help_and_shell_completion() -> None:
    env = dict(os.environ)
    assert cli("--version", env=env).stdout.strip() == f"modelpool {modelpool.__version__}"
    help_text = cli("--help", env=env).stdout
    for verb in ("serve", "demo", "sim", "models", "status", "rank", "probe", "pin", "period", "calendar"):
        assert f"  {verb} " in help_text, verb
    assert "import-litellm" in cli("config", "--help", env=env).stdout
    script = cli("--show-completion", "bash", env=env).stdout
    assert "_modelpool_completion" in script and "complete " in script
    # What bash runs on <TAB>: the completion protocol of the same entry point.
    completing = env | {"_MODELPOOL_COMPLETE": "complete_bash", "COMP_WORDS": "modelpool config im"}
    assert cli(env=completing | {"COMP_CWORD": "2"}).stdout.split() == ["import-litellm"]
    assert "status" in cli(env=completing | {"COMP_WORDS": "modelpool st", "COMP_CWORD": "1"}).stdout.split()


def test_sim_prints_its_fleet_as_json_and_keeps_serving(tmp_path: Path) -> None:
    out = tmp_path / "fleet.yaml"
    proc = subprocess.Popen(
        [*CLI, "sim", "--preset", "two-route", "--json", "--config-out", str(out)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        fleet = json.loads(proc.stdout.readline())
        assert [p["id"] for p in fleet["providers"]] == ["alpha", "beta"] and fleet["config"] == str(out)
        written = yaml.safe_load(out.read_text())
        assert [p["base_url"] for p in written["providers"]] == [p["base_url"] for p in fleet["providers"]]
        listed = httpx.get(fleet["providers"][0]["base_url"] + "/models", timeout=5).json()
        assert [m["id"] for m in listed["data"]] == ["m1"]
    finally:
        proc.terminate()
        proc.communicate(timeout=15)


def test_help_imports_no_server_stack() -> None:
    """`modelpool --help` stays fast by importing nothing heavy (checked by what is imported, not a clock)."""
    probe = (
        "import sys\n"
        "from modelpool.cli.main import app\n"
        "try:\n"
        "    app(['--help'], prog_name='modelpool')\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('rich', 'pydantic', 'yaml', 'uvicorn', 'granian', 'starlette', 'aiohttp', 'httpx',\n"
        "         'modelpool.config')\n"
        "print([m for m in heavy if m in sys.modules], file=sys.stderr)\n"
    )
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=30)
    assert "Usage: modelpool" in res.stdout
    assert res.stderr.strip() == "[]"
