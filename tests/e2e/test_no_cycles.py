"""A served call leaves no reference cycles behind (issue #29).

What a call builds (its trace, walker, relay, the closures that write to the client) must be freed by
reference counting when the call ends. A cycle among them leaves the whole call — the uvicorn request
cycle it holds included — to the garbage collector's full passes, and under load those passes were 16 %
of the gateway's wall time and the longest pauses a request saw (bench/RESULTS.md, issue #29). Every
dialect, streamed and not, native and translated, through the real server: the collector, in
`DEBUG_SAVEALL` mode, must find nothing of modelpool's among what only it could free.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import httpx
import pytest

from gateway_server import GatewayServer
from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider

KEY = "sk-cycles"
MODELS = [
    SimModel("m", output_tokens=30),
    # Longer than the disconnect watch's delay (server/asgi.py): its watcher task starts and is cancelled.
    SimModel("slow", output_tokens=8, tps=80.0, ttft=0.0),
]


@pytest.fixture(scope="module")
def gw() -> Iterator[GatewayServer]:
    spec = FleetSpec(
        [
            SimProvider("omni", dialects=("openai", "anthropic", "responses", "gemini"), models=MODELS),
            SimProvider("an", kind="anthropic", models=[SimModel("t", output_tokens=30)]),
        ],
        fast=True,
    )
    with FleetThread(spec) as ft:
        cfg = ft.to_config(state={"backend": "memory"}, server={"api_keys": [KEY]})
        cfg["pool"] = {"strategy": "priority", "sticky": False}
        with GatewayServer(cfg) as server:
            yield server


def _request(model: str, dialect: str, stream: bool) -> tuple[str, dict]:
    msg = [{"role": "user", "content": "hello"}]
    if dialect == "openai":
        return "/v1/chat/completions", {"model": model, "stream": stream, "messages": msg}
    if dialect == "anthropic":
        return "/v1/messages", {"model": model, "stream": stream, "max_tokens": 64, "messages": msg}
    if dialect == "responses":
        return "/v1/responses", {"model": model, "stream": stream, "input": "hello"}
    verb = "streamGenerateContent?alt=sse" if stream else "generateContent"
    return f"/v1beta/models/{model}:{verb}", {"contents": [{"role": "user", "parts": [{"text": "hello"}]}]}


def _modelpool_garbage(gw: GatewayServer, model: str, dialect: str, stream: bool, calls: int) -> list[str]:
    path, body = _request(model, dialect, stream)
    headers = {"authorization": f"Bearer {KEY}", "x-api-key": KEY, "x-goog-api-key": KEY}
    with httpx.Client(base_url=gw.url, headers=headers, timeout=30) as client:
        for _ in range(3):  # warm: what the first calls build once (caches, pools) is not per-call garbage
            assert client.post(path, json=body).status_code == 200
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            for _ in range(calls):
                resp = client.post(path, json=body)
                assert resp.status_code == 200, resp.text
                assert resp.headers["x-modelpool-route"]
            gw.call(_settle())  # the server's side of the last call has finished
            gc.collect()
            found = sorted({type(o).__qualname__ for o in gc.garbage if _ours(o)})
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
    return found


async def _settle() -> None:
    import asyncio

    await asyncio.sleep(0.05)


def _ours(obj: object) -> bool:
    module = type(obj).__module__ or ""
    if module.startswith("modelpool"):
        return True
    owner = getattr(obj, "__module__", None)  # functions and closures of modelpool's code
    return (
        type(obj).__name__ in ("function", "method")
        and isinstance(owner, str)
        and owner.startswith("modelpool")
    )


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "once"])
@pytest.mark.parametrize("dialect", ["openai", "anthropic", "responses", "gemini"])
def test_a_native_call_is_freed_by_reference_counting(gw: GatewayServer, dialect: str, stream: bool) -> None:
    assert _modelpool_garbage(gw, "m", dialect, stream, calls=8) == []


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "once"])
@pytest.mark.parametrize("dialect", ["openai", "responses", "gemini"])
def test_a_translated_call_is_freed_by_reference_counting(
    gw: GatewayServer, dialect: str, stream: bool
) -> None:
    assert _modelpool_garbage(gw, "t", dialect, stream, calls=8) == []


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_a_stream_the_disconnect_watch_saw_is_freed_by_reference_counting(
    gw: GatewayServer, dialect: str
) -> None:
    assert _modelpool_garbage(gw, "slow", dialect, True, calls=3) == []
