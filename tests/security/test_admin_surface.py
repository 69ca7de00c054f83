"""The admin token guards every admin route (SPEC §12, issue #10): the route table the server really mounts
is enumerated — a new route is covered without editing this file — and each method of each `/admin/*`
route, the MCP endpoint included, answers 401 without the token, with a wrong one in any of the three
places a token is read from, and never leaks data in that answer. The events stream and the questions
need the token too; with it they work."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator

import httpx
import pytest
from starlette.routing import Route

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.server.app import _starlette_app
from modelpool.sim import FleetThread
from support import base_config, two_route_spec

WRONG = [
    {},
    {"authorization": "Bearer wrong-token"},
    {"authorization": f"Bearer {ADMIN_TOKEN}x"},
    {"authorization": f"Basic {ADMIN_TOKEN}"},
    {"x-admin-token": "wrong-token"},
    {"cookie": "modelpool_admin=wrong-token"},
    {"authorization": "Bearer"},
]


@pytest.fixture(scope="module")
def gw() -> Iterator[GatewayServer]:
    with FleetThread(two_route_spec()) as ft, GatewayServer(base_config(ft)) as server:
        yield server


def guarded(gw: GatewayServer) -> list[tuple[str, str]]:
    """(method, concrete path) for every method of every mounted /admin route, plus /mcp."""
    out = [("POST", "/mcp"), ("GET", "/mcp")]
    for route in _starlette_app(gw.gateway).routes:
        if isinstance(route, Route) and route.path.startswith("/admin"):
            path = re.sub(r"\{\w+(:\w+)?\}", "m1", route.path)
            out += [(m, path) for m in sorted(route.methods or ()) if m != "HEAD"]
    return out


def test_every_admin_route_refuses_a_missing_or_wrong_token(gw: GatewayServer) -> None:
    routes = guarded(gw)
    paths = {p for _, p in routes}
    # The enumeration is real: it finds the stream, the questions, the roster, the document.
    assert {"/admin/events", "/admin/questions", "/admin/questions/m1", "/admin/models"} <= paths
    assert len(routes) >= 28
    with httpx.Client(base_url=gw.url, timeout=10) as client:
        for method, path in routes:
            for headers in WRONG:
                resp = client.request(method, path, json={"route": "alpha/m1"}, headers=headers)
                assert resp.status_code == 401, (method, path, headers, resp.status_code, resp.text[:200])
                assert resp.json()["error"]["type"] == "authentication_error"
                assert "alpha/m1" not in resp.text  # nothing of the gateway's state in a refusal
    assert gw.gateway.pins.operators() == {}  # no refused POST changed anything


def test_the_token_is_accepted_in_each_of_its_three_places(gw: GatewayServer) -> None:
    for headers in (
        {"authorization": f"Bearer {ADMIN_TOKEN}"},
        {"x-admin-token": ADMIN_TOKEN},
        {"cookie": f"modelpool_admin={ADMIN_TOKEN}"},
    ):
        assert httpx.get(gw.url + "/admin/questions", headers=headers, timeout=10).json() == {"questions": []}


def test_the_events_stream_opens_only_with_the_token(gw: GatewayServer) -> None:
    with httpx.stream("GET", gw.url + "/admin/events", timeout=10) as refused:
        assert refused.status_code == 401
    with httpx.stream("GET", gw.url + "/admin/events", headers=gw.admin_headers(), timeout=10) as ok:
        assert ok.status_code == 200 and ok.headers["content-type"].startswith("text/event-stream")
        assert next(ok.iter_lines()) == ": connected"


def test_a_refused_stream_request_is_not_held_open(gw: GatewayServer) -> None:
    """Raw HTTP: a watcher without the token gets its 401 and a complete response, not a stream."""
    with socket.create_connection(("127.0.0.1", gw.port), timeout=5) as sock:
        sock.sendall(b"GET /admin/events HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    assert data.startswith(b"HTTP/1.1 401") and b"event-stream" not in data
