"""A recording pass-through between a real CLI and the gateway: what did the client itself send?

The sim records what reached the upstream; the tap records what left the client, so a test can compare the
two (a native relay sends the body as the client sent it, apart from `model` and the effort), and what came
back to it. Bytes go through unchanged both ways (no decompression, the stream forwarded as it arrives).
"""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web

from gateway_server import free_port

SECRETS = {"authorization", "x-api-key", "cookie", "proxy-authorization"}
HOP = {"host", "content-length", "transfer-encoding", "connection", "keep-alive"}


@dataclass
class Sent:
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes = b""  # the body's bytes as they arrived
    reply: bytes = b""  # the target's answer, as it was passed back


class Tap:
    def __init__(self, target: str) -> None:
        self.target = target.rstrip("/")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.sent: list[Sent] = []
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._runner: web.AppRunner | None = None

    def __enter__(self) -> Tap:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("tap did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._start())
        self._ready.set()
        self._loop.run_forever()

    async def _start(self) -> None:
        self._session = aiohttp.ClientSession(auto_decompress=False, timeout=aiohttp.ClientTimeout(total=120))
        app = web.Application(client_max_size=64 * 1024**2)
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    async def _stop(self) -> None:
        await self._session.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in request.headers.items()}
        kept = {k: v for k, v in headers.items() if k not in SECRETS}
        sent = Sent(request.path_qs, kept, body, raw)
        self.sent.append(sent)
        out = {k: v for k, v in headers.items() if k not in HOP}
        async with self._session.request(
            request.method, self.target + request.path_qs, headers=out, data=raw
        ) as up:
            resp = web.StreamResponse(status=up.status)
            for k, v in up.headers.items():
                if k.lower() not in HOP:
                    resp.headers[k] = v
            await resp.prepare(request)
            async for chunk in up.content.iter_any():
                sent.reply += chunk
                await resp.write(chunk)
            await resp.write_eof()
            return resp
