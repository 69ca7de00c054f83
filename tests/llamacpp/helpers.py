"""What the llama.cpp tests share: the gateway config around a real llama-server, the SDK clients, and the
direct calls they compare against (SPEC §10 "Real upstreams in the tests")."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import anthropic
import httpx
import openai

from gateway_server import ADMIN_TOKEN
from llama_server import ALIAS, LlamaServer

PRICES = {"input": 0.5, "cached_input": 0.05, "output": 1.5}  # USD per 1M tokens, for the cost checks
GREEDY = {"temperature": 0, "seed": 7}


def gateway_config(*providers: dict[str, Any], **pool: Any) -> dict[str, Any]:
    return {
        "server": {"admin_token": ADMIN_TOKEN},
        "state": {"backend": "memory"},
        "holidays": {"source": "bundled"},
        "pool": {"strategy": "priority", "retry_backoff": "1ms", **pool},
        "providers": list(providers),
    }


def oai(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=url + "/v1", api_key="client-key", max_retries=0, timeout=120)


def anth(url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=url, api_key="client-key", max_retries=0, timeout=120)


def usage_rows(url: str, by: str = "route") -> list[dict[str, Any]]:
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    report = httpx.get(f"{url}/admin/usage?group_by={by}", headers=headers, timeout=10).json()
    return list(report["rows"])


def chat_body(text: str, max_tokens: int = 24, **extra: Any) -> dict[str, Any]:
    return {
        "model": ALIAS,
        "max_tokens": max_tokens,
        "messages": [{"role": "user", "content": text}],
        **GREEDY,
        **extra,
    }


def direct_chat(llama: LlamaServer, text: str, max_tokens: int = 24) -> tuple[str, dict[str, int]]:
    """The reply text and usage of the same request sent straight to llama-server."""
    reply = llama.post("/v1/chat/completions", chat_body(text, max_tokens)).json()
    usage = reply["usage"]
    return reply["choices"][0]["message"]["content"], {
        "in": usage["prompt_tokens"],
        "out": usage["completion_tokens"],
    }


def wait_usage(url: str, calls: int, by: str = "route", timeout: float = 10.0) -> list[dict[str, Any]]:
    """The usage rows once they count `calls` calls (the book flushes in the background)."""
    import time

    deadline = time.monotonic() + timeout
    rows: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        rows = usage_rows(url, by)
        if sum(r["calls"] for r in rows) >= calls:
            return rows
        time.sleep(0.2)
    return rows


class LateClose:
    """A TCP relay in front of llama-server that passes bytes both ways at once but tells the client that
    llama closed a connection only `delay` seconds later, as a network between them would: a request sent
    on a kept-alive connection in that time went out on a connection llama had already closed, and meets
    its end before any byte of an answer. (On loopback that race is won or lost within a millisecond, so
    it is met only now and then; here every quick reuse meets it.) `url` is the relay's root."""

    def __init__(self, target_port: int, delay: float) -> None:
        self.target_port, self.delay = target_port, delay
        self.loop = asyncio.new_event_loop()
        self.accepted = 0  # connections the client opened
        ready = threading.Event()
        server: list[asyncio.Server] = []

        def run() -> None:
            asyncio.set_event_loop(self.loop)
            server.append(self.loop.run_until_complete(asyncio.start_server(self._relay, "127.0.0.1", 0)))
            ready.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        if not ready.wait(10):
            raise RuntimeError("relay did not start")
        self.server = server[0]
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def _relay(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        self.accepted += 1
        up_r, up_w = await asyncio.open_connection("127.0.0.1", self.target_port)
        gone = False  # llama closed its end

        async def requests() -> None:
            while data := await client_r.read(65536):
                if not gone:
                    up_w.write(data)  # after llama's close, what the client sends is never answered

        pump = asyncio.ensure_future(requests())
        try:
            while data := await up_r.read(65536):
                client_w.write(data)
            gone = True
            await asyncio.sleep(self.delay)  # llama closed: the client learns it a moment later
        except ConnectionError:
            pass
        finally:
            pump.cancel()
            up_w.close()
            client_w.close()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.server.close)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
