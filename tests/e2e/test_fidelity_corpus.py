"""The fidelity corpus (requests recorded from Claude Code and Codex, tests/protocols/corpus/clients/)
replayed through the real gateway (SPEC §1.6).

Native pairing: a replay upstream that speaks the client's dialect records what it got and answers with a
recorded reply stream. What it got must be the client's body (the route's model id in place) and the
client's dialect headers; what the client gets must be the reply's events unchanged — citations,
`signature_delta`, server tool blocks, `custom_tool_call_input.delta` — but for the `modelpool` metadata
on the final event. Translating pairing: the same requests on a route that cannot speak the dialect are
either carried or reported (`x-modelpool-dropped`), never silently cut (tests/protocols holds the
field-by-field property).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from aiohttp import web

from gateway_server import ADMIN_TOKEN, GatewayServer, free_port
from modelpool.config.schema import ServerConfig
from modelpool.protocols.loss import dropped_names, translation_losses
from modelpool.protocols.sse import SSEParser
from modelpool.relays.request import forwarded_headers

CORPUS = Path(__file__).parent.parent / "protocols" / "corpus" / "clients"
REPLIES = {
    "anthropic": ["anthropic_reply_web_search_citations.sse", "anthropic_reply_claude_code_write.sse"],
    "responses": ["responses_reply_codex_apply_patch.sse"],
    # Written in Gemini's own framing (CRLF, a whole GenerateContentResponse per event, no terminator).
    "gemini": ["gemini_reply_gemini_cli_write.sse"],
}
REQUESTS = sorted(p.name for p in CORPUS.glob("*.json"))
ROUTE_MODEL = "upstream-model-7"


class ReplayUpstream:
    """A provider on loopback that speaks one dialect, records each request, answers a recorded stream."""

    def __init__(self, reply: bytes) -> None:
        self.reply = reply
        self.requests: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        self.raw: list[bytes] = []  # the bodies' bytes as they arrived
        self.port = free_port()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_post("/{tail:.*}", self._handle)
        runner = web.AppRunner(app)
        self._loop.run_until_complete(runner.setup())
        self._loop.run_until_complete(web.TCPSite(runner, "127.0.0.1", self.port).start())
        self._ready.set()
        self._loop.run_forever()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.raw.append(await request.read())
        body = await request.json()
        self.requests.append((request.path, {k.lower(): v for k, v in request.headers.items()}, body))
        if not body.get("stream") and ":streamGenerateContent" not in request.path:
            return web.json_response({"error": {"message": "replay upstream: streams only"}}, status=400)
        resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await resp.prepare(request)
        for i in range(0, len(self.reply), 700):  # arbitrary read boundaries
            await resp.write(self.reply[i : i + 700])
        await resp.write_eof()
        return resp

    def __enter__(self) -> ReplayUpstream:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)


def load(name: str) -> dict[str, Any]:
    return json.loads((CORPUS / name).read_text())


def config(port: int, kind: str, dialects: list[str], **pool: Any) -> dict[str, Any]:
    return {
        "state": {"backend": "memory"},
        "server": {"admin_token": ADMIN_TOKEN},
        "providers": [
            {
                "id": "up",
                "kind": kind,
                "base_url": f"http://127.0.0.1:{port}",
                "api_key": "provider-secret-key",
                "dialects": dialects,
                "models": [ROUTE_MODEL],
            }
        ],
        "aliases": {"*": ROUTE_MODEL},
        "pool": {"strategy": "priority", "retry_backoff": "1ms", **pool},
    }


def events(raw: bytes) -> list[tuple[str | None, bytes]]:
    return [(ev.event, ev.data) for ev in SSEParser().feed(raw)]


def client_headers(record: dict[str, Any]) -> dict[str, str]:
    return {
        k: v for k, v in record["headers"].items() if k not in ("content-length", "accept-encoding", "host")
    }


def client_path(record: dict[str, Any]) -> str:
    dialect = record["dialect"]
    if dialect == "gemini":
        return str(record["path"])  # the model and the method are in it
    return "/v1/messages" if dialect == "anthropic" else "/v1/responses"


def native_cases() -> Iterator[Any]:
    for name in REQUESTS:
        dialect = load(name)["dialect"]
        for reply in REPLIES[dialect]:
            yield pytest.param(name, reply, id=f"{name.removesuffix('.json')}|{reply.split('_reply_')[1]}")


@pytest.mark.parametrize(("request_file", "reply_file"), list(native_cases()))
def test_native_pairing_is_byte_faithful_both_ways(request_file: str, reply_file: str) -> None:
    record = load(request_file)
    dialect = record["dialect"]
    reply = (CORPUS / reply_file).read_bytes()
    kind = {"anthropic": "anthropic", "gemini": "gemini"}.get(dialect, "openai")
    with ReplayUpstream(reply) as up, GatewayServer(config(up.port, kind, [dialect])) as gw:
        path = client_path(record)
        headers = {
            **client_headers(record),
            "authorization": "Bearer client-secret",
            "x-api-key": "client-secret",
        }
        if dialect == "gemini":
            headers["x-goog-api-key"] = "client-secret"
        sent_bytes = orjson.dumps(record["body"])
        resp = httpx.post(gw.url + path, content=sent_bytes, headers=headers, timeout=30)
        assert resp.status_code == 200, resp.text[:500]
        (got_path, got_headers, got_body) = up.requests[-1]
    # upstream: the client's body with the route's model id, and the client's dialect headers
    if dialect == "gemini":  # the model is in the path: the body's bytes are the client's, unchanged
        assert got_path == f"/v1beta/models/{ROUTE_MODEL}:streamGenerateContent"
        assert up.raw[-1] == sent_bytes
        assert got_headers["x-goog-api-key"] == "provider-secret-key"
    else:
        assert got_path.endswith(path.removeprefix("/v1"))
        assert got_body == {**record["body"], "model": ROUTE_MODEL}
    patterns = ServerConfig().forward_headers[dialect]  # the documented default rule
    sent = dict(forwarded_headers(record["headers"], patterns))
    assert sent and {k: got_headers.get(k) for k in sent} == sent
    assert "client-secret" not in json.dumps(got_headers)
    # client: the recorded events unchanged but for the modelpool metadata on the final event
    mine, theirs = events(resp.content), events(reply)
    assert [e for e, _ in mine] == [e for e, _ in theirs]
    final = {"anthropic": "message_delta", "gemini": None}.get(dialect, "response.completed")
    for i, ((event, got), (_, want)) in enumerate(zip(mine, theirs, strict=True)):
        if event == final and (dialect != "gemini" or i == len(theirs) - 1):
            obj = orjson.loads(got)
            meta = (obj if dialect in ("anthropic", "gemini") else obj["response"]).pop("modelpool")
            assert meta["route"] == f"up/{ROUTE_MODEL}"
            assert obj == orjson.loads(want)
        else:
            assert got == want  # byte for byte


@pytest.mark.parametrize("request_file", REQUESTS)
def test_translating_pairing_carries_or_reports(request_file: str) -> None:
    """The same requests on a chat-only route: served with what could not be carried named in
    `x-modelpool-dropped` (lossy_translation: allow), or refused with a 400 naming it (refuse)."""
    from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider

    record = load(request_file)
    dialect = record["dialect"]
    path = client_path(record)
    spec = FleetSpec([SimProvider("chat", models=[SimModel(ROUTE_MODEL, output_tokens=3)], ttft=0.001)])
    with FleetThread(spec) as ft:
        cfg = ft.to_config(state={"backend": "memory"}, server={"admin_token": ADMIN_TOKEN})
        cfg["aliases"] = {"*": ROUTE_MODEL}
        body = orjson.dumps(record["body"])
        for mode in ("allow", "refuse"):
            cfg["pool"] = {"lossy_translation": mode, "retry_backoff": "1ms"}
            with GatewayServer(cfg) as gw:
                resp = httpx.post(gw.url + path, content=body, headers=client_headers(record), timeout=30)
            dropped = resp.headers.get("x-modelpool-dropped", "")
            if resp.status_code == 200:
                assert ft.calls("chat")[-1].path.endswith("/chat/completions")
                if mode == "refuse":
                    continue  # nothing that changes the answer was lost; harmless drops are still named
                assert dropped, "an agent CLI's request always carries something chat cannot take"
                parsed = (
                    {**record["body"], "model": ROUTE_MODEL, "stream": True} if dialect == "gemini" else None
                )
                named = set(dropped_names(translation_losses(dialect, parsed or record["body"], "openai")))
                assert named <= set(dropped.split(", ")), (named, dropped)
            else:
                assert mode == "refuse" and resp.status_code == 400, resp.text[:300]
                message = resp.json()["error"]["message"]
                assert "cannot carry" in message and "lossy_translation" in message, message
                blocking = [
                    lo.field
                    for lo in translation_losses(dialect, record["body"], "openai")
                    if lo.changes_answer
                ]
                assert blocking and all(name in message for name in blocking), (blocking, message)
