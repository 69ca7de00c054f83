"""`/mcp` on the gateway: MCP over streamable HTTP (stateless, JSON answers), behind the admin token.

The MCP server is built on the first request (the SDK is not imported at start-up) and its session
manager runs in a background task until the gateway shuts down (`close`).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from starlette.requests import Request

from modelpool.server.admin_guard import admin_token_ok, json_response
from modelpool.server.asgi import Receive, Scope, Send

if TYPE_CHECKING:
    from modelpool.engine import Engine


class McpEndpoint:
    """The ASGI app the gateway's dispatcher sends `/mcp` to."""

    def __init__(self, gw: Engine, admin_app: Any) -> None:
        self.gw = gw
        self.admin_app = admin_app  # the tools call the admin API through it, in process
        self._manager: Any = None
        self._ready: asyncio.Future[None] | None = None
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not admin_token_ok(self.gw, Request(scope)):
            response = json_response(
                {"error": {"message": "admin token required", "type": "authentication_error"}}, 401
            )
            await response(scope, receive, send)
            return
        manager = await self._started()
        await manager.handle_request(scope, receive, send)

    async def _started(self) -> Any:
        if self._ready is None:
            loop = asyncio.get_running_loop()
            self._ready = loop.create_future()
            self._stop = asyncio.Event()
            self._task = loop.create_task(self._run(self._ready, self._stop), name="modelpool-mcp")
        await asyncio.shield(self._ready)
        return self._manager

    async def _run(self, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        try:
            from modelpool.mcp.client import AsgiAdminClient
            from modelpool.mcp.tools import build_server

            server = build_server(
                AsgiAdminClient(self.admin_app, lambda: self.gw.admin_token), stateless_http=True
            )
            server.streamable_http_app()  # creates the session manager
            manager = server.session_manager
            async with manager.run():
                self._manager = manager
                ready.set_result(None)
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError("MCP stopped"))
                self._ready = None  # the next request tries again
            if not isinstance(exc, Exception):
                raise

    async def close(self) -> None:
        if self._task is None or self._stop is None:
            return
        self._stop.set()
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.wait_for(self._task, 5)
        self._task = None
