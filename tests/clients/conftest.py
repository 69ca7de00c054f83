"""Real agent clients (Claude Code, Codex CLI, pi-ai) through the real gateway in front of the scripted sim.

The clients are pinned in tests/clients/package.json and installed by `.ci/run` with
`npm ci --prefix tests/clients`. Missing clients skip these tests locally with the reason, and fail them
when `MODELPOOL_REQUIRE_CLIENTS=1` (set in CI), so a broken install never passes silently.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
BIN = HERE / "node_modules" / ".bin"
CLIENTS = {
    "claude": BIN / "claude",
    "codex": BIN / "codex",
    "gemini": BIN / "gemini",
    "pi-ai": HERE / "node_modules" / "@mariozechner" / "pi-ai" / "package.json",
}


def require_client(name: str) -> Path:
    """The client's path, or skip (fail under MODELPOOL_REQUIRE_CLIENTS=1) with how to install it."""
    path = CLIENTS[name]
    missing = []
    if not path.exists():
        missing.append(f"{name} not installed ({path})")
    if shutil.which("node") is None:
        missing.append("node not on PATH")
    if missing:
        reason = "; ".join(missing) + " — run `npm ci --prefix tests/clients`"
        if os.environ.get("MODELPOOL_REQUIRE_CLIENTS") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return path


@pytest.fixture
def claude() -> Path:
    return require_client("claude")


@pytest.fixture
def codex() -> Path:
    return require_client("codex")


@pytest.fixture
def gemini() -> Path:
    return require_client("gemini")


@pytest.fixture
def pi_ai() -> Path:
    return require_client("pi-ai")
