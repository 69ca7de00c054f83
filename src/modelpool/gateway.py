"""`Gateway`: the library face of modelpool (SPEC §1.4) — the `Engine` with its HTTP face (`asgi_app`),
the call metrics and log lines of that face, and calls from Python (`chat`, `stream`).

    gw = Gateway.from_config("modelpool.yaml")
    async with gw:
        reply = await gw.chat({"model": "deepseek-v4.1-flash", "messages": [...]})

This is the top of the layering: it imports the engine, `observe` and `server`; none of them import it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import orjson

from modelpool.config import LoadedConfig
from modelpool.engine import Engine
from modelpool.observe import Observer
from modelpool.protocols import openai_chat as oc
from modelpool.protocols.sse import SSEParser
from modelpool.relays.choose import once_relay, stream_relay

__all__ = ["Gateway"]


class Gateway(Engine):
    def __init__(
        self,
        loaded: LoadedConfig,
        env: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(loaded, env=env, clock=clock)
        self.observer = Observer(self)  # metrics and call log lines of the HTTP client API
        self._asgi: Any = None

    @property
    def asgi_app(self) -> Any:
        """The HTTP server (client API, admin API, dashboard, /metrics) as an ASGI app, built once."""
        if self._asgi is None:
            from modelpool.server.app import build_app

            self._asgi = build_app(self)
        return self._asgi

    async def chat(self, request: dict[str, Any], headers: Mapping[str, str] | None = None) -> dict[str, Any]:
        """Non-streaming OpenAI Chat Completions call; raises `WalkFailed`/`ClientError` on failure."""
        req = oc.parse_request(orjson.dumps({**request, "stream": False}))
        call = self.prepare("openai", req, headers)
        walker = self.walker(call)
        relay = once_relay(call, self.client, self.inner_order)
        await walker.run(relay.attempt)
        self.finish(call, walker, relay.routing)
        result: dict[str, Any] = orjson.loads(relay.final_body(walker.state))
        result["modelpool"] = walker.state.metadata()
        return result

    async def stream(
        self, request: dict[str, Any], headers: Mapping[str, str] | None = None
    ) -> AsyncIterator[dict[str, Any]]:
        """Streaming call yielding OpenAI chunk dicts; a post-commit failure raises `RuntimeError`."""
        req = oc.parse_request(orjson.dumps({**request, "stream": True}))
        call = self.prepare("openai", req, headers)
        walker = self.walker(call)
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()

        async def start(_status: int, _headers: list[tuple[bytes, bytes]]) -> None:
            return None

        relay = stream_relay(call, self.client, walker.state, start, queue.put, self.inner_order)
        task = asyncio.create_task(walker.run(relay.attempt))
        task.add_done_callback(lambda _t: queue.put_nowait(None))
        parser = SSEParser()
        try:
            while (data := await queue.get()) is not None:
                for ev in parser.feed(data):
                    if ev.is_done:
                        continue
                    obj = orjson.loads(ev.data)
                    if isinstance(obj, dict) and obj.get("error"):
                        raise RuntimeError(obj["error"].get("message", "stream failed"))
                    yield obj
            await task  # re-raises WalkFailed
            self.finish(call, walker, relay.routing)
        finally:
            if not task.done():
                task.cancel()
