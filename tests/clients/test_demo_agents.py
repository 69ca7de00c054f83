"""The README's "Try an agent on the demo" commands, run as written (issue #26, SPEC §10): the real
`modelpool demo` process (its own fleet and its demo traffic, only the port changed), and the real Claude
Code, Codex and Gemini CLIs from tests/clients on PATH. Each command must create the file its prompt names."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from gateway_server import free_port

pytestmark = pytest.mark.timeout(300)

README = Path(__file__).resolve().parents[2] / "README.md"
BIN = Path(__file__).resolve().parent / "node_modules" / ".bin"
BLOCK = re.compile(r"<!-- tested: ([\w-]+) -->\n```(\w+)\n(.*?)\n```", re.S)
DOC_URL = "http://127.0.0.1:4000"
# What each README command asks for: (file, the line it should contain).
EXPECTED = {
    "demo-claude": ("hello.txt", "hello from modelpool"),
    "demo-codex": ("notes.md", "written by codex through modelpool"),
    "demo-gemini": ("todo.txt", "written by gemini through modelpool"),
}


def block(name: str) -> str:
    found = {n: code for n, _lang, code in BLOCK.findall(README.read_text(encoding="utf-8"))}
    return found[name]


@pytest.fixture(scope="module")
def demo() -> Iterator[tuple[str, Path]]:
    """`modelpool demo --port P`: the command the README starts, with its demo traffic running."""
    port = free_port()
    workdir = Path(tempfile.mkdtemp(prefix="mp-demo-"))
    log = open(workdir / "demo.log", "wb")  # noqa: SIM115 - closed below
    cmd = [sys.executable, "-m", "modelpool.cli.main", "demo", "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env={**os.environ})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"modelpool demo exited: {(workdir / 'demo.log').read_text()[-3000:]}")
            try:
                if httpx.get(url + "/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("modelpool demo did not become ready")
            time.sleep(0.1)
        yield url, workdir / "demo.log"
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()


def run_block(name: str, url: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    root = Path(tempfile.mkdtemp(prefix=f"mp-{name}-"))
    home = root / "home"
    home.mkdir()
    env = {
        "PATH": f"{BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(home),  # a reader's fresh machine: no config, no login
        "LANG": "C.UTF-8",
        "NO_COLOR": "1",
        "TERM": "dumb",
        # Claude Code makes no other network call in CI (no telemetry, error reports or update checks)
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "TMPDIR": str(root),  # Gemini CLI writes its error reports there
    }
    script = "set -e\n" + block(name).replace(DOC_URL, url)
    proc = subprocess.run(
        ["bash", "-c", script], cwd=root, env=env, capture_output=True, text=True, timeout=150,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    return proc, root / "demo-agent"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_readme_agent_command_creates_its_file_on_the_demo(name: str, demo: tuple[str, Path]) -> None:
    url, log = demo
    client = name.removeprefix("demo-")
    if not (BIN / client).exists():
        message = f"{client} is not installed in tests/clients (npm ci --prefix tests/clients)"
        if os.environ.get("MODELPOOL_REQUIRE_CLIENTS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    proc, work = run_block(name, url)
    explain = f"exit {proc.returncode}\n--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}"
    filename, line = EXPECTED[name]
    assert proc.returncode == 0, explain
    assert (work / filename).read_text() == line + "\n", explain
    assert proc.stdout.rstrip().endswith(line), explain  # the block's `cat` printed it
    if name == "demo-codex":  # the session Codex printed is on the demo's Sessions page, by that id
        sid = re.search(r"session id: ([0-9a-f-]{36})", proc.stdout + proc.stderr)
        assert sid, explain
        token = re.search(r"admin token: (\S+)", log.read_text())
        assert token, log.read_text()
        r = httpx.get(
            f"{url}/admin/sessions/{sid.group(1)}", headers={"Authorization": f"Bearer {token.group(1)}"}
        )
        assert r.status_code == 200, r.text
        calls = r.json()["calls"]
        assert calls and all(c["outcome"] == "ok" and c["tokens_in"] for c in calls), calls
