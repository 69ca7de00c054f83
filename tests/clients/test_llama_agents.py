"""The real agent CLIs complete a plain text turn through `modelpool serve` on a real llama-server route
(issue #25). SmolLM2-135M is too small to use tools reliably, so only the turn is checked: it completes,
with text, natively relayed (Claude Code on Messages, Codex on Responses, pi-ai on each of its APIs)."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from agents import CODEX_CONFIG, claude_env, run_pi

from gateway_server import ADMIN_TOKEN
from llama_server import ALIAS, LlamaServer
from serve_process import ServeProcess, serve_process

pytestmark = pytest.mark.timeout(420)
PROMPT = "Say hello in one short sentence."
CLI_TIMEOUT = 300.0  # Codex's own prompt is ~4,600 tokens: 15-40 s of prompt processing on 2 cores
CLIENT_KEY = "mp-client-key-for-agent-tests"


@pytest.fixture(scope="module")
def big_llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """One slot of 8,192 tokens: Codex's own prompt needs it. `--top-k 1` makes llama's sampling greedy
    for a client that sends no top_k, whatever temperature it asks for: Claude Code samples at temperature
    1, and a 135M model sampled so rambled past the turn's output cap in about one run of six (CI:
    "Claude's response exceeded the 256 output token maximum"); greedy, it answers the same 25 tokens."""
    server = LlamaServer(tmp_path_factory.mktemp("llama8k"), ctx=8192, slots=1, extra=("--top-k", "1"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def gateway(big_llama: LlamaServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    cfg = {
        "server": {"admin_token": ADMIN_TOKEN, "api_keys": [CLIENT_KEY]},
        "state": {"backend": "memory"},
        "holidays": {"source": "bundled"},
        "aliases": {"claude-*": ALIAS},
        "providers": [big_llama.provider()],
    }
    with serve_process(cfg, tmp_path_factory.mktemp("gw")) as gw:
        yield gw


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=CLI_TIMEOUT
    )


def test_claude_code_text_turn(gateway: ServeProcess, claude: Path) -> None:
    """Claude Code's own system prompt and tools are ~9k tokens, over the slot: trimmed for this turn."""
    root = Path(tempfile.mkdtemp(prefix="mp-claude-llama-"))
    (root / "home").mkdir()
    env = {**claude_env(gateway.url, root / "home"), "ANTHROPIC_AUTH_TOKEN": CLIENT_KEY}
    # Claude Code asks for up to 32,000 tokens: a turn needs a sentence, and a cap keeps a model that does
    # ramble from filling its slot (seen once before greedy sampling: 7,772 tokens, "Prompt is too long").
    env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] = "256"
    argv = [str(claude), "-p", PROMPT, "--tools", "", "--system-prompt", "You are a helpful assistant."]
    proc = _run([*argv, "--output-format", "json"], env, root)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["is_error"] is False and result["result"].strip(), result


def test_codex_text_turn(gateway: ServeProcess, codex: Path) -> None:
    root = Path(tempfile.mkdtemp(prefix="mp-codex-llama-"))
    for d in ("work", "home", "codex"):
        (root / d).mkdir()
    (root / "codex" / "config.toml").write_text(
        CODEX_CONFIG.format(model=ALIAS, base_url=gateway.url + "/v1")
    )
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root / "home"),
        "CODEX_HOME": str(root / "codex"),
        "MODELPOOL_API_KEY": CLIENT_KEY,
        "NO_COLOR": "1",
    }
    last = root / "last.txt"
    argv = [str(codex), "exec", "--skip-git-repo-check", "--output-last-message", str(last), PROMPT]
    proc = _run(argv, env, root / "work")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert last.exists() and last.read_text().strip(), proc.stdout[-3000:]


@pytest.mark.parametrize("api", ["openai-completions", "openai-responses", "anthropic-messages"])
def test_pi_ai_text_turn(gateway: ServeProcess, pi_ai: Path, api: str) -> None:
    run, report = run_pi(api, gateway.url, model=ALIAS, key=CLIENT_KEY, prompt=PROMPT)
    assert run.returncode == 0 and report is not None, run.explain()
    first = report["first"]
    assert first["stopReason"] != "error", first.get("errorMessage") or first
    assert any(p.get("text", "").strip() or p["type"] == "toolCall" for p in first["content"]), first
