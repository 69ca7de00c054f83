"""Run the real gateway (uvicorn + the ASGI app) in a background thread for end-to-end tests."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import uvicorn

from modelpool.config import load_config
from modelpool.gateway import Gateway

ADMIN_TOKEN = "test-admin-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class GatewayServer:
    """`with GatewayServer(config) as gw:` → `gw.url`, `gw.gateway`; stops cleanly on exit."""

    def __init__(
        self,
        source: dict[str, Any] | Path,
        env: dict[str, str] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.port = free_port()
        if isinstance(source, dict) and "holidays" not in source:
            source = {**source, "holidays": {"source": "bundled"}}  # tests never reach the internet
        loaded = load_config(source, env=env)
        self.gateway = Gateway(loaded, env=env, clock=clock)
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            self.gateway.asgi_app,
            host="127.0.0.1",
            port=self.port,
            loop="uvloop",
            http="httptools",
            lifespan="on",
            log_level="warning",
            access_log=False,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        assert self.gateway.loop is not None, "gateway not started"
        return self.gateway.loop

    def call(self, coro: Any, timeout: float = 30) -> Any:
        """Run a coroutine on the gateway's loop (e.g. to inspect or change its state)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def __enter__(self) -> GatewayServer:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("gateway did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)

    def admin_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {ADMIN_TOKEN}"}
