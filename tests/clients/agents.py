"""How the client tests start the fleet, the gateway and each real client (exact invocations and env).

The simulated fleet has one scripted agent model, `agent-m`, on three routes that differ only in the
dialects they speak: `anth` (Anthropic Messages only), `chat` (Chat Completions only) and `resp` (Chat
Completions + Responses). A test serves one of them through the real gateway, so the route either speaks
the client's dialect (native relay) or must be translated to. The clients ask for their own model names
(`claude-sonnet-4-5`, `gpt-5.5`); `aliases` send them to the `agent-m` pool, as the README tells users to.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gateway_server import ADMIN_TOKEN
from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider
from modelpool.sim.spec import AgentTask

HERE = Path(__file__).resolve().parent
MODEL = "agent-m"
CLIENT_KEY = "mp-client-key-for-agent-tests"
TASK = AgentTask(path="hello.txt", content="hello from modelpool\n")
PROMPT = f"Create a file {TASK.path} containing the line: {TASK.content.strip()}"
CLIENT_TIMEOUT = 90.0  # seconds per CLI run; a run takes ~1-3 s when everything works
ROUTES = {
    "anth": ("anthropic",),
    "chat": ("openai",),
    "resp": ("openai", "responses"),
    "gem": ("gemini", "openai"),
}


def fleet_spec() -> FleetSpec:
    def model() -> SimModel:
        return SimModel(MODEL, agent=TASK, reasoning_tokens=3, output_tokens=6)

    fast: dict[str, Any] = {"ttft": 0.005, "tps": 2000.0}
    return FleetSpec(
        [
            SimProvider("anth", kind="anthropic", dialects=ROUTES["anth"], models=[model()], **fast),
            SimProvider("chat", kind="openai", dialects=ROUTES["chat"], models=[model()], **fast),
            SimProvider("resp", kind="openai", dialects=ROUTES["resp"], models=[model()], **fast),
            SimProvider("gem", kind="gemini", dialects=ROUTES["gem"], models=[model()], **fast),
        ]
    )


def gateway_config(ft: FleetThread, route: str, **pool: Any) -> dict[str, Any]:
    """A gateway serving only `route`, client key required, the clients' model names aliased to the pool."""
    cfg = ft.to_config(
        providers=[route],
        state={"backend": "memory"},
        server={"admin_token": ADMIN_TOKEN, "api_keys": [CLIENT_KEY]},
        aliases={"claude-*": MODEL, "gpt-*": MODEL},
    )
    cfg["providers"][0]["dialects"] = list(ROUTES[route])
    cfg["pool"] = {"retry_backoff": "1ms", "sticky": False, **pool}
    return cfg


@dataclass
class Run:
    """One CLI run: its output, the working directory it wrote in, and the file the task asked for."""

    returncode: int
    stdout: str
    stderr: str
    cwd: Path

    @property
    def written(self) -> str | None:
        path = self.cwd / TASK.path
        return path.read_text() if path.exists() else None

    def explain(self) -> str:
        return f"exit {self.returncode}\n--- stdout\n{self.stdout[-4000:]}\n--- stderr\n{self.stderr[-4000:]}"


def _base_env(home: Path) -> dict[str, str]:
    # A clean environment: no inherited keys or proxies, a throwaway HOME, node on PATH.
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "NO_COLOR": "1",
        "TERM": "dumb",
    }


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> Run:
    proc = subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT,
    )
    return Run(proc.returncode, proc.stdout, proc.stderr, cwd)


def claude_env(gateway_url: str, home: Path) -> dict[str, str]:
    """Claude Code against modelpool with no other network: no telemetry, error reports or update checks."""
    return {
        **_base_env(home),
        "ANTHROPIC_BASE_URL": gateway_url,
        "ANTHROPIC_AUTH_TOKEN": CLIENT_KEY,
        "ANTHROPIC_MODEL": "claude-sonnet-4-5",
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_BUG_COMMAND": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
    }


def run_claude(claude: Path, gateway_url: str) -> Run:
    """`claude -p PROMPT --allowedTools Write` in a fresh temp dir (as root it refuses to skip permissions,
    so the Write tool is allowed explicitly)."""
    root = Path(tempfile.mkdtemp(prefix="mp-claude-"))
    work, home = root / "work", root / "home"
    work.mkdir()
    home.mkdir()
    argv = [str(claude), "-p", PROMPT, "--allowedTools", "Write", "--output-format", "json"]
    return _run(argv, claude_env(gateway_url, home), work)


CODEX_CONFIG = """\
model = "{model}"
model_provider = "modelpool"
check_for_update_on_startup = false

[model_providers.modelpool]
name = "modelpool"
base_url = "{base_url}"
env_key = "MODELPOOL_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[otel]
exporter = "none"
"""


def run_codex(codex: Path, gateway_url: str) -> Run:
    """`codex exec --skip-git-repo-check --sandbox workspace-write PROMPT` with a temp CODEX_HOME whose
    config.toml makes modelpool a custom Responses provider; `gpt-5.5` is in Codex's catalogue, so it gets
    the freeform `apply_patch` tool."""
    root = Path(tempfile.mkdtemp(prefix="mp-codex-"))
    work, home, codex_home = root / "work", root / "home", root / "codex"
    for d in (work, home, codex_home):
        d.mkdir()
    (codex_home / "config.toml").write_text(
        CODEX_CONFIG.format(model="gpt-5.5", base_url=gateway_url + "/v1")
    )
    env = {**_base_env(home), "CODEX_HOME": str(codex_home), "MODELPOOL_API_KEY": CLIENT_KEY}
    argv = [str(codex), "exec", "--skip-git-repo-check", "--sandbox", "workspace-write", PROMPT]
    return _run(argv, env, work)


GEMINI_SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
}


def run_gemini(gemini: Path, gateway_url: str, prompt: str = PROMPT, **extra_env: str) -> Run:
    """`gemini -p PROMPT -m agent-m --approval-mode yolo --skip-trust` in a fresh temp dir, offline: API-key
    auth and no usage statistics in `$GEMINI_CLI_HOME/.gemini/settings.json`, its own TMPDIR (it writes
    error reports there), the gateway as `GOOGLE_GEMINI_BASE_URL` and the client key as `GEMINI_API_KEY`
    (`extra_env`: more variables, e.g. `GEMINI_CLI_CUSTOM_HEADERS`)."""
    root = Path(tempfile.mkdtemp(prefix="mp-gemini-"))
    work, home, tmp = root / "work", root / "home", root / "tmp"
    for d in (work, home / ".gemini", tmp):
        d.mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(GEMINI_SETTINGS))
    env = {
        **_base_env(home),
        "GEMINI_CLI_HOME": str(home),
        "TMPDIR": str(tmp),
        "GEMINI_API_KEY": CLIENT_KEY,
        "GOOGLE_GEMINI_BASE_URL": gateway_url,
        **extra_env,
    }
    argv = [str(gemini), "-p", prompt, "-m", MODEL, "--approval-mode", "yolo", "--skip-trust", "-o", "text"]
    return _run(argv, env, work)


PI_BASE = {"openai-completions": "/v1", "openai-responses": "/v1", "anthropic-messages": ""}


def run_pi(
    api: str, gateway_url: str, model: str = MODEL, key: str = CLIENT_KEY, prompt: str = PROMPT
) -> tuple[Run, dict[str, Any] | None]:
    """tests/clients/pi_agent.mjs with one pi-ai API; returns the run and its JSON report."""
    root = Path(tempfile.mkdtemp(prefix="mp-pi-"))
    args = {
        "api": api,
        "baseUrl": gateway_url + PI_BASE[api],
        "model": model,
        "apiKey": key,
        "prompt": prompt,
    }
    run = _run(["node", str(HERE / "pi_agent.mjs"), json.dumps(args)], _base_env(root), root)
    lines = [ln for ln in run.stdout.splitlines() if ln.startswith("{")]
    return run, (json.loads(lines[-1]) if lines else None)


def assert_native_bodies(
    sent: list[Any], calls: list[Any], effort_keys: set[str], header_prefix: str
) -> None:
    """A native relay: each upstream call carries the body its client request had — every field, unknown
    ones included — apart from `model` and the effort fields, and the client's dialect headers verbatim.

    `sent` are the tap's records (what left the CLI), `calls` the sim's (what reached the route), in order.
    """
    api = [
        s
        for s in sent
        if isinstance(s.body, dict) and s.path.split("?")[0].endswith(("/messages", "/responses"))
    ]
    assert len(api) == len(calls), ([s.path for s in api], [c.path for c in calls])
    skip = {"model", *effort_keys}
    for s, c in zip(api, calls, strict=True):
        want = {k: v for k, v in s.body.items() if k not in skip}
        got = {k: v for k, v in (c.body or {}).items() if k not in skip}
        assert got.keys() == want.keys(), (sorted(want.keys() - got.keys()), sorted(got.keys() - want.keys()))
        for key in want:
            assert got[key] == want[key], (
                f"{key} changed on the way: {str(want[key])[:300]} → {str(got[key])[:300]}"
            )
        for name, value in s.headers.items():
            if name.startswith(header_prefix):
                assert c.headers.get(name) == value, (name, value, c.headers.get(name))
