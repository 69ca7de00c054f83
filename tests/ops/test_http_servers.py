"""The promises `modelpool serve` keeps under each HTTP server it offers (uvicorn, granian).

Every test runs the real CLI (`modelpool serve --http-server NAME`) over the simulated fleet, and drives it
as a client would: a client that leaves mid-stream, a client that stops reading, SIGTERM during a
stream, `--workers 2`. The relays rely on these (cli/http_server.py, server/asgi.DisconnectWatch).
"""

from __future__ import annotations

import json
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from openai import OpenAI

from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider
from redis_server import RedisServer
from serve_process import ServeProcess, serve_process
from support import base_config

SERVERS = ["uvicorn", "granian"]
MESSAGES = [{"role": "user", "content": "hello"}]
GRACEFUL_SECONDS = 5  # cli/http_server.GRACEFUL_SECONDS


@pytest.fixture(params=SERVERS)
def stack(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def slow_fleet() -> Iterator[FleetThread]:
    models = [
        SimModel("slow", output_tokens=400, tps=20.0),  # 20 s of tokens
        SimModel("short", output_tokens=40, tps=20.0),  # 2 s of tokens
        SimModel("huge", output_tokens=100_000, tps=50_000.0),  # ~17 MB of SSE in 2 s
    ]
    with FleetThread(FleetSpec([SimProvider("p", models=models, ttft=0.01)])) as ft:
        yield ft


@pytest.fixture
def served(slow_fleet: FleetThread, tmp_path: Path, stack: str) -> Iterator[ServeProcess]:
    with serve_process(base_config(slow_fleet), tmp_path, "--http-server", stack) as server:
        yield server


def _last_call(ft: FleetThread, model: str, outcome: str, within: float) -> bool:
    """The upstream's record of the last call to `model`, once it has `outcome` (waits `within` s)."""
    deadline = time.monotonic() + within
    while True:
        calls = [c for c in ft.calls("p") if c.model == model]
        if calls and calls[-1].outcome == outcome:
            return True
        assert time.monotonic() < deadline, f"no {model} call with outcome {outcome}: {calls[-1:]}"
        time.sleep(0.05)


def test_ready_answers_and_logs_stay_json(served: ServeProcess, stack: str) -> None:
    assert httpx.get(served.url + "/readyz").json()["ready"] is True
    client = OpenAI(base_url=served.url + "/v1", api_key="unused", max_retries=0)
    reply = client.chat.completions.create(model="short", messages=MESSAGES)  # type: ignore[arg-type]
    assert reply.choices[0].message.content
    stderr = served.stop()
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines, "the server logged nothing"
    for line in lines:  # stderr is a pipe: every line is JSON, the server's own included
        json.loads(line)
    assert any(f"({stack})" in json.loads(line)["msg"] for line in lines)


def test_client_disconnect_closes_the_upstream(
    served: ServeProcess, slow_fleet: FleetThread, stack: str
) -> None:
    body = {"model": "slow", "messages": MESSAGES, "stream": True}
    with httpx.stream("POST", served.url + "/v1/chat/completions", json=body, timeout=10) as resp:
        for line in resp.iter_lines():
            if '"content"' in line:
                break  # the client got its first token and walks away
    # 400 tokens at 20 tok/s take 20 s: "disconnected" within 5 s means the gateway closed the upstream.
    _last_call(slow_fleet, "slow", "disconnected", 5)


def test_a_client_that_stops_reading_holds_the_upstream_back(
    served: ServeProcess, slow_fleet: FleetThread, stack: str
) -> None:
    """Back-pressure: the reply is not piled up in the gateway while the client does not read."""
    body = json.dumps({"model": "huge", "messages": MESSAGES, "stream": True}).encode()
    # How long the whole reply takes to a client that reads: a gateway that buffered without bound would
    # let the upstream finish in that time whoever reads.
    start = time.monotonic()
    with httpx.stream("POST", served.url + "/v1/chat/completions", content=body, timeout=30) as resp:
        size = sum(len(chunk) for chunk in resp.iter_bytes())
    full_read = time.monotonic() - start
    assert size > 10 * 2**20 and _last_call(slow_fleet, "huge", "ok", 5)
    port = int(served.url.rsplit(":", 1)[1])
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)  # before connect: a small window
    sock.connect(("127.0.0.1", port))
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    sock.sendall(head + body)
    assert b" 200 " in sock.recv(4096)
    time.sleep(2 * full_read + 1)  # twice what the whole reply takes, not reading
    sock.close()
    # Still unfinished when the client left: the upstream was held back, not drained into memory.
    _last_call(slow_fleet, "huge", "disconnected", 10)


def test_sigterm_lets_an_in_flight_stream_finish(served: ServeProcess, stack: str) -> None:
    body = {"model": "short", "messages": MESSAGES, "stream": True}
    lines: list[str] = []
    with httpx.stream("POST", served.url + "/v1/chat/completions", json=body, timeout=10) as resp:
        for line in resp.iter_lines():
            lines.append(line)
            if '"content"' in line and served.proc.poll() is None:
                served.proc.terminate()  # SIGTERM, as an orchestrator would, with ~2 s of tokens to go
    assert lines[-1] == "data: [DONE]" or "data: [DONE]" in lines
    content = "".join(
        json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
        for line in lines
        if line.startswith("data: {") and json.loads(line[6:])["choices"]
    )
    assert len(content) > 40  # every token arrived, not the ones sent before the signal
    # It stopped by itself: uvicorn re-raises the signal once it has shut down (-15), granian exits 0.
    assert served.proc.wait(GRACEFUL_SECONDS + 5) in (0, -signal.SIGTERM)


def test_sigterm_stops_within_the_grace_period(served: ServeProcess, stack: str) -> None:
    body = {"model": "slow", "messages": MESSAGES, "stream": True}
    with httpx.stream("POST", served.url + "/v1/chat/completions", json=body, timeout=30) as resp:
        for line in resp.iter_lines():
            if '"content"' in line:
                break
        start = time.monotonic()
        served.proc.terminate()  # 20 s of tokens left: longer than the grace period
        served.proc.wait(GRACEFUL_SECONDS + 10)
    assert time.monotonic() - start < GRACEFUL_SECONDS + 4


def test_two_workers_serve_one_port(tmp_path: Path, slow_fleet: FleetThread, stack: str) -> None:
    redis = RedisServer(tmp_path / "redis").start()
    try:
        cfg = base_config(slow_fleet)
        cfg["state"] = {"backend": "redis", "redis_url": redis.url, "redis_prefix": "w"}
        with serve_process(cfg, tmp_path, "--http-server", stack, "--workers", "2") as server:
            seen: set[str] = set()
            deadline = time.monotonic() + 30
            while len(seen) < 2:  # a new connection per request: the kernel spreads them over workers
                assert time.monotonic() < deadline, f"answers from one worker only: {seen}"
                r = httpx.get(server.url + "/readyz", headers={"connection": "close"})
                seen.add(r.json()["state"]["replica"])
            body = {"model": "short", "messages": MESSAGES}
            r = httpx.post(server.url + "/v1/chat/completions", json=body, timeout=10)
            assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"]
    finally:
        redis.stop()
