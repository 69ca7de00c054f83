"""Run the real `modelpool serve` as a subprocess (stderr piped, so not a terminal) for log tests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from gateway_server import free_port
from support import wait_ready

CLI = [sys.executable, "-m", "modelpool.cli.main"]


class ServeProcess:
    def __init__(self, proc: subprocess.Popen[str], url: str) -> None:
        self.proc = proc
        self.url = url
        self.stderr = ""

    def stop(self) -> str:
        """Stop the server (SIGTERM, as an operator would) and return everything it wrote to stderr."""
        if self.proc.poll() is None:
            self.proc.terminate()
        _, self.stderr = self.proc.communicate(timeout=20)
        return self.stderr


@contextmanager
def serve_process(config: dict[str, Any], tmp_path: Path, *args: str) -> Iterator[ServeProcess]:
    path = tmp_path / "modelpool.yaml"
    path.write_text(yaml.safe_dump(config))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    proc = subprocess.Popen(
        [*CLI, "serve", "--config", str(path), "--port", str(port), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    server = ServeProcess(proc, f"http://127.0.0.1:{port}")
    try:
        if not wait_ready(server.url, proc):
            raise RuntimeError(f"modelpool serve did not start:\n{server.stop()}")
        yield server
    finally:
        server.stop()
