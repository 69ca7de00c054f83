"""Shared helpers for the routing tests: fleets, SDK calls with their modelpool headers, admin reads,
an `/admin/events` watcher and a settable clock."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import openai
import orjson

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import Fault, FleetSpec, FleetThread, SimModel, SimProvider

MODEL = "m1"
TOKENS = 4
MESSAGES = [{"role": "user", "content": "hello"}]


def quick_provider(
    pid: str,
    *,
    faults: list[Fault] | None = None,
    ttft: float = 0.005,
    reasoning: int = 0,
    tokens: int = TOKENS,
    models: tuple[str, ...] = (MODEL,),
) -> SimProvider:
    return SimProvider(
        pid,
        models=[SimModel(m, output_tokens=tokens, reasoning_tokens=reasoning) for m in models],
        ttft=ttft,
        tps=5000.0,
        faults=list(faults or []),
    )


@contextmanager
def fleet_of(*providers: SimProvider) -> Iterator[FleetThread]:
    with FleetThread(FleetSpec(list(providers))) as ft:
        yield ft


def config(ft: FleetThread, state: dict[str, Any] | None = None, **pool: Any) -> dict[str, Any]:
    cfg = ft.to_config()
    cfg["state"] = state or {"backend": "memory"}
    cfg["server"] = {"admin_token": ADMIN_TOKEN}
    cfg["pool"] = {"strategy": "priority", "retry_backoff": "1ms", **pool}
    return cfg


def client(gw: GatewayServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0)


@dataclass
class Reply:
    """What the client saw of one call."""

    route: str  # x-modelpool-route header
    text: str
    reasoning: str
    headers: httpx.Headers
    meta: dict[str, Any] | None = None  # `modelpool` of the last stream chunk (or of the body)
    chunks: list[str] = field(default_factory=list)  # content deltas as they arrived

    @property
    def served_by(self) -> str:
        """The route that produced the answer (the stream's last chunk knows of late switches)."""
        return str(self.meta["route"]) if self.meta else self.route

    @property
    def attempts(self) -> int:
        """Upstream attempts of the call (the stream's last chunk counts attempts after the headers)."""
        return int(self.meta["attempts"]) if self.meta else int(self.headers["x-modelpool-attempts"])


def ask(
    gw: GatewayServer,
    *,
    session: str | None = None,
    stream: bool = False,
    headers: dict[str, str] | None = None,
    model: str = MODEL,
    sdk: openai.OpenAI | None = None,
) -> Reply:
    """One chat call through the official SDK; raises what the SDK raises."""
    extra = dict(headers or {})
    if session is not None:
        extra["x-session-id"] = session
    raw = (sdk or client(gw)).chat.completions.with_raw_response.create(
        model=model, messages=MESSAGES, stream=stream, extra_headers=extra
    )
    if not stream:
        reply = raw.parse()
        msg = reply.choices[0].message
        extra_fields = msg.model_extra or {}
        return Reply(
            route=raw.headers["x-modelpool-route"],
            text=msg.content or "",
            reasoning=str(extra_fields.get("reasoning_content") or ""),
            headers=raw.headers,
            meta=(reply.model_extra or {}).get("modelpool"),
        )
    chunks: list[str] = []
    thinking: list[str] = []
    meta: dict[str, Any] | None = None
    for chunk in raw.parse():
        if chunk.choices:
            delta = chunk.choices[0].delta
            if delta.content:
                chunks.append(delta.content)
            think = (delta.model_extra or {}).get("reasoning_content")
            if think:
                thinking.append(think)
        extra_fields = chunk.model_extra or {}
        if "modelpool" in extra_fields:
            meta = extra_fields["modelpool"]
    return Reply(
        route=raw.headers["x-modelpool-route"],
        text="".join(chunks),
        reasoning="".join(thinking),
        headers=raw.headers,
        meta=meta,
        chunks=chunks,
    )


def admin(gw: GatewayServer, path: str, body: dict[str, Any] | None = None) -> Any:
    if body is None:
        resp = httpx.get(gw.url + path, headers=gw.admin_headers(), timeout=10)
    else:
        resp = httpx.post(gw.url + path, headers=gw.admin_headers(), json=body, timeout=10)
    resp.raise_for_status()
    return resp.json()


def plan_of(gw: GatewayServer, session: str) -> list[str]:
    """The candidate order of the session's last call, as `/admin/sessions/{id}` explains it."""
    return [c["route"] for c in admin(gw, f"/admin/sessions/{session}")["last_plan"]["candidates"]]


def plan_reasons(gw: GatewayServer, session: str) -> dict[str, list[str]]:
    plan = admin(gw, f"/admin/sessions/{session}")["last_plan"]
    return {c["route"]: c["why"] for c in plan["candidates"]}


def route_row(gw: GatewayServer, route: str) -> dict[str, Any]:
    rows = admin(gw, "/admin/status")["ranking"]
    return next(r for r in rows if r["route"] == route)


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout} s")
        time.sleep(0.02)


class FakeClock:
    """A settable wall clock for `GatewayServer(clock=...)`: rests and expiries follow it, not real time."""

    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class EventWatcher:
    """A live `/admin/events` subscriber (the dashboard's role): collects events as they stream in.

    A plain socket so the test can hang up from its own thread at any moment (shutdown wakes the reader).
    """

    def __init__(self, gw: GatewayServer) -> None:
        self.gw = gw
        self.events: list[dict[str, Any]] = []
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> EventWatcher:
        before = self.gw.gateway.events.watchers
        sock = socket.create_connection(("127.0.0.1", self.gw.port), timeout=10)
        request = (
            "GET /admin/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {ADMIN_TOKEN}\r\nAccept: text/event-stream\r\n\r\n"
        )
        sock.sendall(request.encode())
        sock.settimeout(None)
        self._sock = sock
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        wait_for(lambda: self.gw.gateway.events.watchers > before, what="events subscription")
        return self

    def _read(self) -> None:
        assert self._sock is not None
        buf = b""
        while True:
            try:
                data = self._sock.recv(65536)
            except OSError:
                return
            if not data:
                return
            buf += data
            *lines, buf = buf.split(b"\n")
            for line in lines:
                line = line.rstrip(b"\r")
                if line.startswith(b"data: "):
                    self.events.append(orjson.loads(line[6:]))

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in list(self.events) if e["type"] == kind]

    def __exit__(self, *exc: object) -> None:
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._sock.close()
        if self._thread is not None:
            self._thread.join(5)
