"""One process per SQLite state file (issue #7): a second owner is refused with the redis advice."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from modelpool.sim import FleetThread
from modelpool.state import SqliteBackend
from modelpool.state.filelock import StateFileInUse
from support import base_config


async def test_a_second_backend_on_the_same_file_is_refused_until_the_first_closes(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    first = SqliteBackend(path)
    await first.start()
    first.put("health", "a/x", {"attempts": 1})
    second = SqliteBackend(path)
    with pytest.raises(StateFileInUse, match=r"state\.backend: redis"):
        await second.start()
    await first.close()
    await second.start()  # the lock went with the first owner
    try:
        assert await second.load("health") == {"a/x": {"attempts": 1}}
    finally:
        await second.close()


def test_a_second_serve_on_the_same_state_file_exits_with_the_reason(
    tmp_path: Path, fleet: FleetThread
) -> None:
    cfg = base_config(fleet)
    cfg["state"] = {"backend": "sqlite", "path": str(tmp_path / "state.db")}
    path = tmp_path / "c.yaml"
    path.write_text(json.dumps(cfg))
    held = tmp_path / "state.db.lock"
    # Hold the lock from this process, as a running gateway would.
    fd = os.open(held, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.write(fd, b"4242")
    try:
        argv = [sys.executable, "-m", "modelpool.cli.main", "serve", "--config", str(path), "--port", "0"]
        res = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    finally:
        os.close(fd)
    assert res.returncode != 0
    assert "in use by another modelpool process (pid 4242)" in res.stderr
