"""The dashboard's door (SPEC §12): admin endpoints answer 401 without the token, `/` is the login page
until the HttpOnly, SameSite=Strict cookie is set, and static files cannot leave their folder."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from dash_helpers import dashboard_config

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider

PROTECTED = [
    ("GET", "/admin/models"),
    ("POST", "/admin/models"),
    ("GET", "/admin/events"),
    ("GET", "/admin/status"),
    ("GET", "/admin/providers"),
    ("POST", "/admin/providers/order"),
    ("GET", "/admin/groups"),
    ("PUT", "/admin/groups"),
    ("PATCH", "/admin/settings"),
    ("GET", "/admin/questions"),
]


@pytest.fixture(scope="module")
def gw() -> Iterator[GatewayServer]:
    spec = FleetSpec([SimProvider("alpha", models=[SimModel("m1", output_tokens=2)], ttft=0.001, tps=5000.0)])
    with FleetThread(spec) as ft, GatewayServer(dashboard_config(ft)) as server:
        yield server


@pytest.mark.parametrize(("method", "path"), PROTECTED)
def test_admin_endpoints_without_the_token_answer_401(gw: GatewayServer, method: str, path: str) -> None:
    for headers in ({}, {"authorization": "Bearer wrong"}, {"cookie": "modelpool_admin=wrong"}):
        response = httpx.request(method, gw.url + path, json={}, headers=headers, timeout=10)
        assert response.status_code == 401, (path, headers, response.text)
        assert response.json()["error"]["type"] == "authentication_error"


def test_login_sets_a_strict_httponly_cookie_and_logout_clears_it(gw: GatewayServer) -> None:
    with httpx.Client(base_url=gw.url, timeout=10) as client:
        page = client.get("/")
        assert page.status_code == 200 and 'id="login"' in page.text and 'id="nav"' not in page.text
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        failed = client.post("/login", data={"token": "wrong"})
        assert failed.status_code == 303 and failed.headers["location"] == "/?login=failed"
        assert "set-cookie" not in failed.headers
        ok = client.post("/login", data={"token": ADMIN_TOKEN})
        assert ok.status_code == 303 and ok.headers["location"] == "/"
        cookie = ok.headers["set-cookie"].lower()
        assert "modelpool_admin=" in cookie and "httponly" in cookie and "samesite=strict" in cookie
        assert 'id="nav"' in client.get("/").text  # the client now carries the cookie
        assert client.get("/admin/models").status_code == 200
        out = client.post("/logout")
        assert out.status_code == 303
        assert 'id="login"' in client.get("/").text
        assert client.get("/admin/models").status_code == 401


def test_login_accepts_json_too(gw: GatewayServer) -> None:
    response = httpx.post(gw.url + "/login", json={"token": ADMIN_TOKEN}, timeout=10)
    assert response.status_code == 303 and "modelpool_admin=" in response.headers["set-cookie"]


def test_static_files_are_served_and_cannot_escape_their_folder(gw: GatewayServer) -> None:
    css = httpx.get(gw.url + "/static/app.css", timeout=10)
    assert css.status_code == 200 and "col-secondary" in css.text
    js = httpx.get(gw.url + "/static/js/app.js", timeout=10)
    assert js.status_code == 200 and "javascript" in js.headers["content-type"]
    for sneaky in ("/static/%2e%2e/routes.py", "/static/..%2froutes.py", "/static/../routes.py"):
        response = httpx.get(gw.url + sneaky, timeout=10)
        assert response.status_code == 404, sneaky
        assert "dashboard_routes" not in response.text
