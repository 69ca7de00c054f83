"""`modelpool launch claude|codex` through the real CLI, the real gateway and the real agent CLIs (issue #30).

The pool's id, `agent-m`, is in no CLI's own table: without launch, Claude Code assumes a 1M window and Codex
falls back to metadata with no `apply_patch` tool. Launched, Claude Code runs with the pool's window in
`CLAUDE_CODE_MAX_CONTEXT_TOKENS` and Codex with a catalogue entry cloned from its own bundled one, so it
offers its freeform `apply_patch` (a `custom` tool natively on a Responses route, a function on a
chat-only one) and edits an existing file with it. The user's own configuration (a temp HOME with
`~/.claude` and `~/.codex` in it) is layered under modelpool's and left unchanged.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import CLIENT_TIMEOUT, claude_env

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import CallRecord, FleetSpec, FleetThread, SimModel, SimProvider
from modelpool.sim.spec import AgentTask

pytestmark = pytest.mark.timeout(200)

SRC = Path(__file__).resolve().parents[2] / "src"
POOL = "agent-m"
WINDOW = 64000
KEY = "mp-client-key-for-launch-tests"
EDIT = AgentTask(path="notes.txt", content="the new line\n", replaces="the old line\n")
WRITE = AgentTask(path="hello.txt", content="hello from modelpool\n")
USER_CODEX = (
    'model_reasoning_effort = "low"\ncheck_for_update_on_startup = false\n\n[analytics]\nenabled = false\n'
)
USER_CODEX += '\n[otel]\nexporter = "none"\n'
USER_CLAUDE = {"env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9/wrong"}, "theme": "dark"}


def fleet(task: AgentTask) -> FleetSpec:
    def model() -> SimModel:
        return SimModel(POOL, agent=task, context_window=WINDOW, efforts=["low", "high"], output_tokens=6)

    fast: dict[str, Any] = {"ttft": 0.005, "tps": 2000.0}
    return FleetSpec(
        [
            SimProvider("resp", kind="openai", dialects=("openai", "responses"), models=[model()], **fast),
            SimProvider("chat", kind="openai", dialects=("openai",), models=[model()], **fast),
            SimProvider("anth", kind="anthropic", dialects=("anthropic",), models=[model()], **fast),
        ]
    )


@pytest.fixture(scope="module")
def edit_fleet() -> Iterator[FleetThread]:
    with FleetThread(fleet(EDIT)) as ft:
        yield ft


@pytest.fixture(scope="module")
def write_fleet() -> Iterator[FleetThread]:
    with FleetThread(fleet(WRITE)) as ft:
        yield ft


def gateway(ft: FleetThread, route: str, **pool: Any) -> GatewayServer:
    cfg = ft.to_config(
        providers=[route], state={"backend": "memory"}, server={"admin_token": ADMIN_TOKEN, "api_keys": [KEY]}
    )
    cfg["pool"] = {"retry_backoff": "1ms", "sticky": False, **pool}
    return GatewayServer(cfg)


def user_home() -> tuple[Path, Path]:
    """(a temp HOME holding the user's own ~/.codex and ~/.claude, a work dir with the file to edit)."""
    root = Path(tempfile.mkdtemp(prefix="mp-launch-"))
    home, work = root / "home", root / "work"
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "config.toml").write_text(USER_CODEX)
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_text(json.dumps(USER_CLAUDE))
    (home / ".claude.json").write_text(json.dumps({"hasCompletedOnboarding": True}))
    work.mkdir()
    (work / EDIT.file).write_text(EDIT.replaces or "")
    return home, work


def snapshot(home: Path) -> dict[str, str]:
    """The user's own configuration files (every file under ~/.codex, ~/.claude and ~/.gemini, and
    ~/.claude.json) with their contents: what launch must leave as it found it."""
    files = [home / ".claude.json"]
    for folder in (".codex", ".claude", ".gemini"):
        files += sorted(p for p in (home / folder).rglob("*") if p.is_file())
    return {str(p): p.read_text() for p in files if p.exists()}


def launch(
    cli: str,
    binary: Path,
    url: str,
    home: Path,
    work: Path,
    args: list[str],
    extra: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    env = {
        **claude_env(url, home),  # a clean env: HOME, PATH, no telemetry (its ANTHROPIC_* are dropped below)
        "PYTHONPATH": str(SRC),
        "MODELPOOL_API_KEY": KEY,
        **(extra or {}),
    }
    for name in ("ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_MODEL", "CLAUDE_CONFIG_DIR"):
        env.pop(name)
    argv = [sys.executable, "-m", "modelpool", "launch", cli, "--url", url, "--cli", str(binary), *args]
    return subprocess.run(
        argv,
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT,
        stdin=subprocess.DEVNULL,
    )


def tools(call: CallRecord) -> dict[str, dict[str, Any]]:
    out = {}
    for t in (call.body or {}).get("tools") or []:
        out[t.get("name") or (t.get("function") or {}).get("name") or t.get("type")] = t
    return out


CODEX_ARGS = ["--", "exec", "--skip-git-repo-check", "--sandbox", "workspace-write", f"Edit {EDIT.file}"]


def assert_edited(proc: subprocess.CompletedProcess[str], work: Path) -> None:
    said = f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, said
    assert (work / EDIT.file).read_text() == EDIT.content, said
    assert "metadata" not in proc.stderr + proc.stdout, said  # no "Model metadata for … not found"


@pytest.mark.parametrize("route", ["resp", "chat"], ids=["responses-route", "chat-only-route"])
def test_launch_codex_edits_a_file_with_apply_patch(edit_fleet: FleetThread, codex: Path, route: str) -> None:
    edit_fleet.reset_calls()
    home, work = user_home()
    before = snapshot(home)
    with gateway(edit_fleet, route) as gw:  # defaults: Codex's web_search is left out on Chat, and named
        proc = launch("codex", codex, gw.url, home, work, CODEX_ARGS)
    assert_edited(proc, work)
    calls = edit_fleet.calls(route)
    offered = [tools(c) for c in calls]
    patch = [t["apply_patch"] for t in offered if "apply_patch" in t]
    assert len(patch) >= 2, [sorted(t) for t in offered]
    if route == "resp":
        assert patch[0]["type"] == "custom" and patch[0]["format"]["type"] == "grammar"
    else:
        assert patch[0]["type"] == "function"
    assert all((c.body or {})["model"] == POOL for c in calls)
    assert snapshot(home) == before  # the user's own files are untouched
    # ... and the private config keeps the user's own keys under modelpool's
    private = home / ".cache" / "modelpool" / "launch" / "codex" / POOL
    config = (private / "config.toml").read_text()
    assert 'model_reasoning_effort = "low"' in config and 'model_provider = "modelpool"' in config
    entry = json.loads((private / "modelpool-models.json").read_text())["models"][0]
    assert entry["slug"] == POOL and entry["context_window"] == WINDOW
    assert [level["effort"] for level in entry["supported_reasoning_levels"]] == ["low", "high"]


def test_launch_claude_writes_a_file_knowing_the_window(write_fleet: FleetThread, claude: Path) -> None:
    write_fleet.reset_calls()
    home, work = user_home()
    before = snapshot(home)
    # A wrapper as `--cli` records the environment the launched process really got.
    dump = work.parent / "claude-env.json"
    wrapper = work.parent / "claude-wrapper"
    wrapper.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        f"json.dump(dict(os.environ), open({str(dump)!r}, 'w'))\n"
        f"os.execv({str(claude)!r}, [{str(claude)!r}, *sys.argv[1:]])\n"
    )
    wrapper.chmod(0o755)
    prompt = f"Create a file {WRITE.path} containing the line: {WRITE.content.strip()}"
    with gateway(write_fleet, "anth") as gw:
        shown = launch("claude", wrapper, gw.url, home, work, ["--print"])
        args = ["--", "-p", prompt, "--allowedTools", "Write", "--output-format", "json"]
        proc = launch("claude", wrapper, gw.url, home, work, args)
    assert shown.returncode == 0, shown.stderr
    assert f"export CLAUDE_CODE_MAX_CONTEXT_TOKENS={WINDOW}" in shown.stdout, shown.stdout
    assert f"export ANTHROPIC_MODEL={POOL}" in shown.stdout and f"ANTHROPIC_BASE_URL={gw.url}" in shown.stdout
    said = f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, said
    result = json.loads(proc.stdout)
    assert result["is_error"] is False and WRITE.done_text in result["result"], said
    assert (work / WRITE.file).read_text() == WRITE.content
    env = json.loads(dump.read_text())
    assert env["CLAUDE_CODE_MAX_CONTEXT_TOKENS"] == str(WINDOW)
    assert env["ANTHROPIC_BASE_URL"] == gw.url and env["ANTHROPIC_AUTH_TOKEN"] == KEY
    private = Path(env["CLAUDE_CONFIG_DIR"])
    settings = json.loads((private / "settings.json").read_text())
    assert settings["theme"] == "dark" and settings["env"]["ANTHROPIC_BASE_URL"] == gw.url
    assert KEY not in (private / "settings.json").read_text()  # the key stays in the environment
    assert KEY not in shown.stdout and "ANTHROPIC_AUTH_TOKEN='<your modelpool client key>'" in shown.stdout
    calls = write_fleet.calls("anth")
    assert calls and all((c.body or {})["model"] == POOL for c in calls)
    assert snapshot(home) == before


def test_codex_with_model_catalog_url_and_no_launch(edit_fleet: FleetThread, codex: Path) -> None:
    """Codex pointed at modelpool by hand: the provider's `model_catalog_url` is the gateway's /v1/models."""
    edit_fleet.reset_calls()
    home, work = user_home()
    codex_home = home / ".codex"
    with gateway(edit_fleet, "resp") as gw:
        (codex_home / "config.toml").write_text(
            f'model = "{POOL}"\nmodel_provider = "modelpool"\n{USER_CODEX}\n'
            "[features]\napi_key_model_discovery = true\n\n"
            "[model_providers.modelpool]\n"
            f'name = "modelpool"\nbase_url = "{gw.url}/v1"\nenv_key = "MODELPOOL_API_KEY"\n'
            f'wire_api = "responses"\nmodel_catalog_url = "{gw.url}/v1/models"\n'
        )
        env = {**claude_env(gw.url, home), "CODEX_HOME": str(codex_home), "MODELPOOL_API_KEY": KEY}
        argv = [str(codex), *CODEX_ARGS[1:]]
        proc = subprocess.run(
            argv,
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=CLIENT_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
        listed = subprocess.run(
            [str(codex), "debug", "models"], env=env, capture_output=True, text=True, timeout=CLIENT_TIMEOUT
        )
    assert_edited(proc, work)
    patch = [tools(c)["apply_patch"] for c in edit_fleet.calls("resp") if "apply_patch" in tools(c)]
    assert patch and patch[0]["type"] == "custom", [sorted(tools(c)) for c in edit_fleet.calls("resp")]
    models = {m["slug"]: m for m in json.loads(listed.stdout)["models"]}
    assert models[POOL]["context_window"] == WINDOW, listed.stdout[:2000]


def test_launch_says_what_is_missing(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(SRC)}
    base = [sys.executable, "-m", "modelpool", "launch"]
    missing = subprocess.run([*base, "gemini"], env=env, capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "npm install -g @google/gemini-cli" in missing.stderr
    fake = tmp_path / "codex"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    args = ["codex", "--cli", str(fake), "--url", "http://127.0.0.1:9"]
    down = subprocess.run([*base, *args], env=env, capture_output=True, text=True, timeout=60)
    assert down.returncode == 2 and "cannot reach the gateway at http://127.0.0.1:9" in down.stderr


@pytest.fixture(scope="module")
def tiny_fleet() -> Iterator[FleetThread]:
    """The pool's window (1,000 tokens) is smaller than the CLIs' own system prompts."""
    model = SimModel(POOL, agent=WRITE, context_window=1000, output_tokens=6)
    fast: dict[str, Any] = {"ttft": 0.005, "tps": 2000.0}
    spec = FleetSpec(
        [
            SimProvider("resp", kind="openai", dialects=("openai", "responses"), models=[model], **fast),
            SimProvider("anth", kind="anthropic", dialects=("anthropic",), models=[model], **fast),
        ]
    )
    with FleetThread(spec) as ft:
        yield ft


def test_codex_acts_on_modelpools_overflow_error(tiny_fleet: FleetThread, codex: Path) -> None:
    """Codex reads `context_length_exceeded` as its context window running out; no upstream is asked."""
    tiny_fleet.reset_calls()
    home, work = user_home()
    with gateway(tiny_fleet, "resp") as gw:
        proc = launch("codex", codex, gw.url, home, work, CODEX_ARGS)
    assert proc.returncode != 0
    assert "ran out of room in the model's context window" in proc.stdout + proc.stderr, proc.stderr[-3000:]
    assert tiny_fleet.calls("resp") == []


def test_claude_code_reads_modelpools_overflow_error_as_prompt_too_long(
    tiny_fleet: FleetThread, claude: Path, tmp_path: Path
) -> None:
    """Claude Code run by hand (so it does not know the window) gets "prompt is too long: N tokens > M
    maximum" from modelpool and reads both numbers; no upstream is asked."""
    tiny_fleet.reset_calls()
    (tmp_path / "home").mkdir()
    with gateway(tiny_fleet, "anth") as gw:
        env = {**claude_env(gw.url, tmp_path / "home"), "ANTHROPIC_AUTH_TOKEN": KEY, "ANTHROPIC_MODEL": POOL}
        proc = subprocess.run(
            [str(claude), "-p", "hi", "--output-format", "json"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=CLIENT_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    result = json.loads(proc.stdout)
    assert result["is_error"] is True and result["api_error_status"] == 400, proc.stdout
    assert result["result"].startswith("Prompt is too long") and "(limit 1000)" in result["result"], (
        proc.stdout
    )
    assert tiny_fleet.calls("anth") == []


def test_launch_gemini_writes_a_file(write_fleet: FleetThread, gemini: Path) -> None:
    """`modelpool launch gemini -- -p …`: Gemini CLI offline with API-key auth, its base URL the gateway and
    the pool its model, in a private home over the user's own settings (left as they were)."""
    write_fleet.reset_calls()
    home, work = user_home()
    (home / ".gemini").mkdir()
    (home / ".gemini" / "settings.json").write_text('{"ui": {"theme": "ANSI"}}\n')
    before = snapshot(home)
    assert str(home / ".gemini" / "settings.json") in before
    prompt = f"Create a file {WRITE.path} containing the line: {WRITE.content.strip()}"
    with gateway(write_fleet, "chat") as gw:
        shown = launch("gemini", gemini, gw.url, home, work, ["--print"])
        args = ["--", "-p", prompt, "--approval-mode", "yolo", "--skip-trust"]
        proc = launch("gemini", gemini, gw.url, home, work, args, {"TMPDIR": str(work.parent)})
    assert shown.returncode == 0, shown.stderr
    assert f"GOOGLE_GEMINI_BASE_URL={gw.url}" in shown.stdout and KEY not in shown.stdout, shown.stdout
    said = f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, said
    assert (work / WRITE.file).read_text() == WRITE.content, said
    calls = write_fleet.calls("chat")
    assert calls and all((c.body or {})["model"] == POOL for c in calls)
    assert snapshot(home) == before  # the user's settings.json is theirs, unchanged
