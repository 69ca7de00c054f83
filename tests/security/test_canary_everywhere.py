"""A provider key appears nowhere a user can look (SPEC §12, issue #10), with the places *enumerated*:
every GET route the app mounts under `/admin` (path parameters filled with real ids), the OpenAPI
document, the events stream replayed from the start, every dashboard file, the models list, the readiness
probe, the MCP tool list, the gateway's log records and the SQLite state. The keyed upstream echoes its key
in its error text, as some providers do, so the key really travels through the failure paths."""

from __future__ import annotations

import logging
import re
import sqlite3
import time
from pathlib import Path

import httpx
import pytest
from starlette.routing import Route

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.server.app import _starlette_app
from modelpool.server.dashboard.routes import STATIC
from modelpool.sim import Fault, FleetSpec, FleetThread, InnerProvider, SimModel, SimProvider

CANARY = "sk-canary-0b1e2d3c4f5a6978"
AGG_MODEL = "vendor/agg-model"


def spec() -> FleetSpec:
    fast = {"ttft": 0.002, "tps": 5000.0}
    return FleetSpec(
        [
            SimProvider("keyed", models=[SimModel("m1", output_tokens=3)], api_key=CANARY, **fast),
            SimProvider("spare", models=[SimModel("m1", output_tokens=3)], **fast),
            SimProvider(
                "agg",
                kind="vercel",
                models=[SimModel(AGG_MODEL, output_tokens=3)],
                api_key=CANARY,
                inner=[InnerProvider("fast", tps=400, ttft_ms=200), InnerProvider("slow", tps=50)],
                default_inner="slow",
                **fast,
            ),
        ]
    )


def read_events(url: str) -> str:
    """The events stream replayed from its start, read until it goes quiet (it never ends by itself)."""
    text = ""
    params = {"replay": "1000"}
    with httpx.stream("GET", url + "/admin/events", params=params, headers=auth(), timeout=1.0) as resp:
        assert resp.status_code == 200
        try:
            for chunk in resp.iter_text():
                text += chunk
        except httpx.ReadTimeout:  # replay done, nothing new: the quiet we waited for
            pass
    return text


def auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def test_a_provider_key_is_nowhere_a_user_can_look(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    db = tmp_path / "state.db"
    caplog.set_level(logging.DEBUG)
    seen: dict[str, str] = {}
    with FleetThread(spec()) as ft:
        cfg = ft.to_config(
            state={"backend": "sqlite", "path": str(db)},
            server={"admin_token": ADMIN_TOKEN},
            pool={"strategy": "priority", "retries_per_route": 0, "sticky": True},
            holidays={"source": "bundled"},
        )
        ft.set_faults("keyed", [Fault("status", times=2, status=401, message=f"bad key {CANARY}")])
        with GatewayServer(cfg) as gw, httpx.Client(base_url=gw.url, timeout=10) as client:
            chat = {"model": "m1", "messages": [{"role": "user", "content": "hi"}]}
            first = client.post("/v1/chat/completions", json=chat, headers={"x-session-id": "s1"})
            assert first.status_code == 200 and first.headers["x-modelpool-route"] == "spare/m1"
            seen["answer"] = first.text
            agg = client.post("/v1/chat/completions", json={**chat, "model": AGG_MODEL})
            assert agg.status_code == 200
            seen["aggregator answer"] = agg.text
            for route in _starlette_app(gw.gateway).routes:
                if not (isinstance(route, Route) and route.path.startswith("/admin")):
                    continue
                if "GET" not in (route.methods or ()) or route.path == "/admin/events":
                    continue
                path = re.sub(r"\{sid(:\w+)?\}", "s1", route.path)
                path = re.sub(r"\{model(:\w+)?\}", AGG_MODEL, path)
                resp = client.get(path, headers=auth())
                assert resp.status_code == 200, (path, resp.text[:200])
                seen[path] = resp.text
            assert len([p for p in seen if p.startswith("/admin/")]) >= 14
            seen["events"] = read_events(gw.url)
            assert "route_failure" in seen["events"] or "failure" in seen["events"]
            client.cookies.set("modelpool_admin", ADMIN_TOKEN)
            seen["dashboard"] = client.get("/").text
            for f in STATIC.rglob("*"):
                if f.is_file():
                    rel = f.relative_to(STATIC).as_posix()
                    seen[f"static/{rel}"] = client.get(f"/static/{rel}").text
            seen["models"] = client.get("/v1/models").text
            seen["readyz"] = client.get("/readyz").text
            mcp = client.post(
                "/mcp",
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                headers={**auth(), "accept": "application/json, text/event-stream"},
            )
            seen["mcp tools"] = mcp.text
        assert any(call.key_ok for call in ft.calls("keyed"))  # the key really went upstream
    time.sleep(0.1)
    with sqlite3.connect(db) as conn:
        stored = " ".join(str(row) for row in conn.execute("SELECT ns, key, value FROM kv"))
    assert "keyed/m1" in stored  # the echoed failure was persisted …
    seen["sqlite"] = stored
    seen["log"] = "\n".join(r.getMessage() for r in caplog.records)
    leaks = {where: text[:200] for where, text in seen.items() if CANARY in text or CANARY[3:] in text}
    assert leaks == {}  # … and never the key
