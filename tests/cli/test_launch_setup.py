"""What `modelpool launch` sets up for each CLI (issue #30), checked without running the agent CLIs: the
Gemini CLI's settings and environment (its real-CLI test comes with the Gemini dialect), the Codex config
written back as TOML, and `--print` against a running gateway."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.cli import launch_codex, launch_gemini
from modelpool.cli.launch import write
from modelpool.cli.launch_setup import Context
from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider

SRC = Path(__file__).resolve().parents[2] / "src"
ROW = {"id": "glm-5.3-flash", "name": "glm-5.3-flash", "context_window": 96000, "agent_context_window": 64000}


def context(tmp_path: Path, cli: str) -> Context:
    home = tmp_path / "home"
    return Context(cli, "/usr/bin/true", "http://127.0.0.1:4000", "k-1", ROW, tmp_path / "private", home)


def test_gemini_settings_are_the_users_with_api_key_auth_and_no_usage_statistics(tmp_path: Path) -> None:
    ctx = context(tmp_path, "gemini")
    user = ctx.user_home / ".gemini"
    user.mkdir(parents=True)
    own = {"ui": {"theme": "GitHub"}, "security": {"auth": {"selectedType": "oauth-personal"}, "x": 1}}
    (user / "settings.json").write_text(json.dumps(own))
    (user / "tmp").mkdir()  # the user's history folder
    setup = launch_gemini.setup(ctx)
    assert setup.env == {
        "GEMINI_CLI_HOME": str(ctx.home),
        "GEMINI_API_KEY": "k-1",
        "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:4000",
    }
    assert setup.args == ["-m", "glm-5.3-flash"]
    write(setup)
    settings = json.loads((ctx.home / ".gemini" / "settings.json").read_text())
    assert settings == {
        "ui": {"theme": "GitHub"},
        "security": {"auth": {"selectedType": "gemini-api-key"}, "x": 1},
        "privacy": {"usageStatisticsEnabled": False},
    }
    assert (ctx.home / ".gemini" / "tmp").resolve() == user / "tmp"  # linked: history stays theirs
    assert json.loads((user / "settings.json").read_text()) == own  # the user's file unchanged


def test_codex_config_keeps_the_users_keys_and_writes_valid_toml(tmp_path: Path) -> None:
    own = {
        "model": "gpt-5.5",
        "approval_policy": "on-request",
        "projects": {"/home/me/x y": {"trust_level": "trusted"}},
        "mcp_servers": {"fs": {"command": "npx", "args": ["-y", "fs"], "env": {"A": "1"}}},
        "tui": {"notifications": True},
    }
    from modelpool.cli.launch_setup import merged

    ours = {"model": "pool", "model_providers": {"modelpool": {"base_url": "http://h/v1"}}}
    text = launch_codex.dump_toml(merged(own, ours))
    back = tomllib.loads(text)
    assert back["model"] == "pool" and back["approval_policy"] == "on-request"
    assert back["projects"] == own["projects"] and back["mcp_servers"] == own["mcp_servers"]
    assert back["model_providers"]["modelpool"]["base_url"] == "http://h/v1"


@pytest.fixture
def gateway() -> object:
    spec = FleetSpec([SimProvider("p", models=[SimModel("glm-5.3-flash", context_window=64000)])])
    with FleetThread(spec) as ft:
        cfg = ft.to_config(state={"backend": "memory"}, server={"admin_token": ADMIN_TOKEN})
        cfg["holidays"] = {"source": "bundled"}
        with GatewayServer(cfg) as gw:
            yield gw


def test_print_shows_the_setup_of_each_cli(gateway: GatewayServer, tmp_path: Path) -> None:
    fake = tmp_path / "gemini"
    fake.write_text("#!/bin/sh\nexit 3\n")
    fake.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(SRC)}
    argv = [sys.executable, "-m", "modelpool", "launch", "gemini", "--url", gateway.url, "--cli", str(fake)]
    shown = subprocess.run([*argv, "--print", "--", "-p", "hi"], env=env, capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "export GEMINI_API_KEY=modelpool" in out  # no client key needed: any string
    assert f"export GOOGLE_GEMINI_BASE_URL={gateway.url}" in out
    assert '"selectedType": "gemini-api-key"' in out and '"usageStatisticsEnabled": false' in out
    assert out.rstrip().endswith(f"{fake} -m glm-5.3-flash -p hi")
    assert not (tmp_path / ".cache").exists()  # --print writes nothing
    ran = subprocess.run([*argv, "--", "-p", "hi"], env=env, capture_output=True, text=True)
    assert ran.returncode == 3  # the CLI's own exit status
    assert (tmp_path / ".cache/modelpool/launch/gemini/glm-5.3-flash/.gemini/settings.json").is_file()
