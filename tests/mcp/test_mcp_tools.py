"""Issue #12: modelpool's MCP server, through the `mcp` SDK's own client over both transports."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import yaml
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client
from mcp.client.streamable_http import streamablehttp_client
from mcp.types import CallToolResult

import modelpool
from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import FleetThread, demo_fleet
from support import base_config

# `streamablehttp_client` is the name every mcp 1.x release has (newer ones prefer `streamable_http_client`).
pytestmark = pytest.mark.filterwarnings("ignore:Use `streamable_http_client` instead:DeprecationWarning")

TOOLS = {"modelpool_status", "modelpool_probe", "modelpool_pin", "modelpool_rank", "modelpool_period"}
AGG_MODEL = "deepseek/deepseek-v4.1-flash-1017"


@asynccontextmanager
async def http_session(gw: GatewayServer) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    async with (
        streamablehttp_client(gw.url + "/mcp", headers=headers) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def stdio_params(url: str, token: str) -> StdioServerParameters:
    # The child imports the same modelpool as this test (whatever the installed copy points at).
    src = str(Path(modelpool.__file__).resolve().parents[1])
    env = {
        **get_default_environment(),
        "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]),
    }
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "modelpool.cli.main", "mcp", "--url", url, "--token", token],
        env=env,
    )


@asynccontextmanager
async def stdio_session(gw: GatewayServer) -> AsyncIterator[ClientSession]:
    params = stdio_params(gw.url, ADMIN_TOKEN)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def admin(gw: GatewayServer, path: str) -> Any:
    r = httpx.get(gw.url + path, headers=gw.admin_headers(), timeout=15)
    r.raise_for_status()
    return r.json()


def payload(result: CallToolResult) -> dict[str, Any]:
    assert not result.isError, result.content
    if result.structuredContent is not None:
        return result.structuredContent
    text = result.content[0].text  # type: ignore[union-attr]
    return json.loads(text)  # type: ignore[no-any-return]


def error_text(result: CallToolResult) -> str:
    assert result.isError, result
    return " ".join(getattr(c, "text", "") for c in result.content)


def served_by(gw: GatewayServer) -> str:
    """The route that serves a new conversation (a session's sticky route would outrank the pin)."""
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0)
    raw = client.chat.completions.with_raw_response.create(
        model="m1", messages=[{"role": "user", "content": f"hi {uuid.uuid4()}"}]
    )
    return raw.headers["x-modelpool-route"]


async def exercise(session: ClientSession, gw: GatewayServer) -> None:
    """List the tools, call each, and check the answers against the admin API."""
    listed = await session.list_tools()
    assert {t.name for t in listed.tools} == TOOLS
    for tool in listed.tools:
        assert tool.description and len(tool.description) > 40
        assert tool.inputSchema["type"] == "object"
    probe_schema = next(t for t in listed.tools if t.name == "modelpool_probe").inputSchema
    assert set(probe_schema["properties"]) == {"models", "max_requests", "timeout"}

    status = payload(await session.call_tool("modelpool_status", {}))
    expected = admin(gw, "/admin/status")
    assert {p: [r["route"] for r in rows] for p, rows in status["pools"].items()} == expected["pools"]
    assert status["in_force"] == expected["in_force"]
    assert status["period"]["period"] == expected["period"]["period"]
    assert status["version"] == expected["version"]
    assert "m1" in status["summary"] or "2 routes" in status["summary"]

    period = payload(await session.call_tool("modelpool_period", {}))
    now = admin(gw, "/admin/period")
    for key in ("period", "time_zone", "windows", "next_flip", "next_period", "why"):
        assert period[key] == now[key], key
    assert period["summary"].startswith(now["period"])
    at = "2026-10-01T10:00:00+08:00"  # National Day: idle all day
    assert payload(await session.call_tool("modelpool_period", {"at": at}))["period"] == "idle"

    probe = payload(await session.call_tool("modelpool_probe", {"models": ["m1"], "max_requests": 1}))
    assert probe["spent"]["requests"] == 1
    assert len(probe["results"]) == 1 and probe["results"][0]["ok"]
    assert probe["skipped"] == [r for r in expected["pools"]["m1"] if r != probe["results"][0]["route"]]
    assert "spent 1 requests" in probe["summary"]
    bad = await session.call_tool("modelpool_probe", {"max_requests": 1000})
    assert bad.isError

    assert await asyncio.to_thread(served_by, gw) == "alpha/m1"
    pinned = payload(await session.call_tool("modelpool_pin", {"route": "beta/m1"}))
    assert pinned["pool"] == "m1" and pinned["route"] == "beta/m1"
    assert pinned["pins"] == admin(gw, "/admin/pins")["pins"] == {"m1": "beta/m1"}
    assert await asyncio.to_thread(served_by, gw) == "beta/m1"
    cleared = payload(await session.call_tool("modelpool_pin", {"pool": "m1", "clear": True}))
    assert cleared["route"] is None and cleared["pins"] == admin(gw, "/admin/pins")["pins"] == {}
    assert await asyncio.to_thread(served_by, gw) == "alpha/m1"

    assert "unknown route 'nope/m1'" in error_text(
        await session.call_tool("modelpool_pin", {"route": "nope/m1"})
    )
    assert "unknown pool" in error_text(
        await session.call_tool("modelpool_pin", {"pool": "zz", "clear": True})
    )
    assert "route" in error_text(await session.call_tool("modelpool_pin", {}))
    assert "no aggregator" in error_text(await session.call_tool("modelpool_rank", {"model": "m1"}))
    assert "unknown model" in error_text(await session.call_tool("modelpool_probe", {"models": ["nope"]}))


@pytest.fixture
def config_file(fleet: FleetThread, tmp_path: Path) -> Path:
    path = tmp_path / "modelpool.yaml"
    path.write_text(yaml.safe_dump(base_config(fleet)))
    return path


async def test_streamable_http_transport(config_file: Path) -> None:
    before = config_file.read_bytes()
    with GatewayServer(config_file) as gw:
        async with http_session(gw) as session:
            await exercise(session, gw)
    assert config_file.read_bytes() == before  # a pin never touches the config file


async def test_stdio_transport(fleet: FleetThread) -> None:
    with GatewayServer(base_config(fleet)) as gw:
        async with stdio_session(gw) as session:
            await exercise(session, gw)


async def test_stdio_reports_an_unreachable_gateway_as_a_tool_error(fleet: FleetThread) -> None:
    with GatewayServer(base_config(fleet)) as gw:
        url = gw.url
    params = stdio_params(url, "t")
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        assert "cannot reach the gateway" in error_text(await session.call_tool("modelpool_status", {}))


def test_mcp_endpoint_requires_the_admin_token(fleet: FleetThread) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    accept = {"Accept": "application/json, text/event-stream"}
    with GatewayServer(base_config(fleet)) as gw:
        assert httpx.post(gw.url + "/mcp", json=init, headers=accept).status_code == 401
        wrong = {**accept, "Authorization": "Bearer wrong"}
        assert httpx.post(gw.url + "/mcp", json=init, headers=wrong).status_code == 401
        assert httpx.get(gw.url + "/mcp/").status_code == 401


@pytest.fixture(scope="module")
def demo() -> Iterator[FleetThread]:
    with FleetThread(demo_fleet()) as ft:
        ft.set_faults("vercel", [])
        yield ft


async def test_rank_matches_the_admin_ranking(demo: FleetThread) -> None:
    cfg = demo.to_config(
        providers=["vercel"], state={"backend": "memory"}, server={"admin_token": ADMIN_TOKEN}
    )
    cfg["pool"] = {"strategy": "priority"}
    with GatewayServer(cfg) as gw:
        deadline = time.monotonic() + 10
        while not (expected := admin(gw, f"/admin/ranking/{AGG_MODEL}"))["available"]:
            assert time.monotonic() < deadline, expected
            await asyncio.sleep(0.05)
        async with http_session(gw) as session:
            rank = payload(await session.call_tool("modelpool_rank", {"model": AGG_MODEL}))
    assert rank["order"] == expected["order"] and rank["order"]
    assert rank["route"] == expected["route"] and rank["provider"] == "vercel"
    assert [r for r in rank["rows"]] == expected["rows"]
    assert rank["summary"].startswith(f"{AGG_MODEL} via {expected['route']}: order {expected['order'][0]}")
