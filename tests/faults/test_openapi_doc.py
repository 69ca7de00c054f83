"""The admin API's OpenAPI document (issue #10): served at `/admin/openapi.json` behind the admin token, a
valid OpenAPI 3 document, and complete — every `/admin/*` route the app mounts is described with the same
methods, so a route added without a description fails here."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
import schemathesis
from starlette.routing import Route

from gateway_server import GatewayServer
from modelpool.server.admin_openapi import openapi_document
from modelpool.server.app import _starlette_app
from modelpool.sim import FleetThread
from support import base_config, two_route_spec


@pytest.fixture(scope="module")
def gw() -> Iterator[GatewayServer]:
    with FleetThread(two_route_spec()) as ft, GatewayServer(base_config(ft)) as server:
        yield server


def mounted_admin_routes(gw: GatewayServer) -> set[tuple[str, str]]:
    app = _starlette_app(gw.gateway)  # the same route table the server mounts
    found = set()
    for route in app.routes:
        if isinstance(route, Route) and route.path.startswith("/admin/"):
            path = re.sub(r"\{(\w+)(:\w+)?\}", r"{\1}", route.path)  # {sid:path} → {sid}
            found |= {(path, m.lower()) for m in route.methods or () if m != "HEAD"}
    return found


def test_the_document_needs_the_admin_token_and_is_what_the_module_builds(gw: GatewayServer) -> None:
    assert httpx.get(gw.url + "/admin/openapi.json", timeout=10).status_code == 401
    served = httpx.get(gw.url + "/admin/openapi.json", headers=gw.admin_headers(), timeout=10)
    assert served.status_code == 200 and served.headers["content-type"] == "application/json"
    doc = served.json()
    assert doc == openapi_document()
    assert doc["openapi"].startswith("3.")
    assert doc["components"]["securitySchemes"]["adminToken"] == {"type": "http", "scheme": "bearer"}
    assert doc["security"] == [{"adminToken": []}]


def test_the_document_is_valid_openapi() -> None:
    schema = schemathesis.openapi.from_dict(openapi_document())
    schema.validate()  # raises on a document that is not OpenAPI 3
    assert len(list(schema.get_all_operations())) >= 25


def test_every_admin_route_is_described_with_its_methods(gw: GatewayServer) -> None:
    mounted = mounted_admin_routes(gw)
    assert ("/admin/events", "get") in mounted and ("/admin/questions/{qid}", "post") in mounted
    described = {(path, method) for path, ops in openapi_document()["paths"].items() for method in ops}
    assert mounted == described


def test_path_parameters_are_declared(gw: GatewayServer) -> None:
    for path, ops in openapi_document()["paths"].items():
        names = set(re.findall(r"\{(\w+)\}", path))
        for method, op in ops.items():
            declared = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
            assert declared == names, (path, method)
            assert {"200", "400", "401"} <= set(op["responses"])
