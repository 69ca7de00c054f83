"""What the gateway exposes without the admin token (SPEC §12, issue #10): static files stay inside their
folder whatever the encoding of the escape, client keys are enforced on every client endpoint when set,
and `modelpool serve` refuses a non-loopback bind without client keys."""

from __future__ import annotations

import http.client
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from gateway_server import GatewayServer, free_port
from modelpool.security import is_loopback
from modelpool.sim import FleetThread
from support import base_config, two_route_spec

CLIENT_KEY = "sk-client-test-1"
# Request targets sent byte for byte (no client-side normalisation of `..`): each tries to reach a file
# outside dashboard/static/ — the package sources or the system.
ESCAPES = [
    "/static/../routes.py",
    "/static/../../app.py",
    "/static/%2e%2e/routes.py",
    "/static/%2E%2E/%2E%2E/app.py",
    "/static/..%2froutes.py",
    "/static/..%2Froutes.py",
    "/static/%2e%2e%2f%2e%2e%2fapp.py",
    "/static/%252e%252e/routes.py",
    "/static/..%5croutes.py",
    "/static/..\\routes.py",
    "/static//etc/passwd",
    "/static/%2fetc%2fpasswd",
    "/static/../../../../../../etc/passwd",
    "/static/js/../../routes.py",
    "/static/./../routes.py",
    "/static/%00../routes.py",
]


@pytest.fixture(scope="module")
def ft() -> Iterator[FleetThread]:
    with FleetThread(two_route_spec()) as fleet:
        yield fleet


@pytest.fixture(scope="module")
def keyed(ft: FleetThread) -> Iterator[GatewayServer]:
    cfg = base_config(ft)
    cfg["server"] = {**cfg["server"], "api_keys": [CLIENT_KEY]}  # type: ignore[dict-item]
    with GatewayServer(cfg) as server:
        yield server


def raw_get(port: int, target: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.putrequest("GET", target, skip_accept_encoding=True)
        conn.endheaders()
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


@pytest.mark.parametrize("target", ESCAPES)
def test_static_files_cannot_escape_their_folder(keyed: GatewayServer, target: str) -> None:
    status, body = raw_get(keyed.port, target)
    assert status in (400, 404), (target, status, body[:200])
    for leaked in (b"def dashboard_routes", b"def build_app", b"root:x:0:0"):
        assert leaked not in body, target


def test_static_files_inside_the_folder_are_served(keyed: GatewayServer) -> None:
    status, body = raw_get(keyed.port, "/static/app.css")
    assert status == 200 and body  # the fixture above is not vacuous: the mount serves real files


CLIENT_ENDPOINTS = [
    ("POST", "/v1/chat/completions", {"model": "m1", "messages": [{"role": "user", "content": "hi"}]}),
    ("POST", "/chat/completions", {"model": "m1", "messages": [{"role": "user", "content": "hi"}]}),
    (
        "POST",
        "/v1/messages",
        {"model": "m1", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]},
    ),
    ("POST", "/v1/messages/count_tokens", {"model": "m1", "messages": [{"role": "user", "content": "hi"}]}),
    ("POST", "/v1/responses", {"model": "m1", "input": "hi"}),
    ("POST", "/responses", {"model": "m1", "input": "hi"}),
    ("GET", "/v1/models", None),
    ("GET", "/models", None),
]


@pytest.mark.parametrize(("method", "path", "body"), CLIENT_ENDPOINTS)
def test_client_keys_are_enforced_on_every_client_endpoint(
    keyed: GatewayServer, ft: FleetThread, method: str, path: str, body: dict | None
) -> None:
    before = len(ft.calls("alpha")) + len(ft.calls("beta"))
    for headers in ({}, {"authorization": "Bearer sk-wrong"}, {"x-api-key": "sk-wrong"}):
        refused = httpx.request(method, keyed.url + path, json=body, headers=headers, timeout=10)
        assert refused.status_code == 401, (path, headers, refused.text[:200])
        assert "authentication" in refused.text
    assert len(ft.calls("alpha")) + len(ft.calls("beta")) == before  # a refused call never went upstream
    for headers in ({"authorization": f"Bearer {CLIENT_KEY}"}, {"x-api-key": CLIENT_KEY}):
        ok = httpx.request(method, keyed.url + path, json=body, headers=headers, timeout=10)
        assert ok.status_code == 200, (path, headers, ok.text[:200])


def serve(config: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "modelpool.cli.main", "serve", "--config", str(config), *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    ("server", "flags"),
    [
        ({}, ["--host", "0.0.0.0"]),
        ({}, ["--host", "::"]),
        ({}, ["--host", "192.168.1.5"]),
        ({"host": "0.0.0.0"}, []),  # the bind from the config file, not the flag
        ({"host": "127.evil.example"}, []),  # a host name that merely starts like a loopback address
    ],
)
def test_a_non_loopback_bind_without_client_keys_is_refused(
    tmp_path: Path, server: dict[str, str], flags: list[str]
) -> None:
    config = tmp_path / "modelpool.yaml"
    config.write_text(yaml.safe_dump({"providers": [], "server": server}))
    res = serve(config, *flags, "--port", str(free_port()))
    assert res.returncode == 2, res.stderr[-500:]
    assert "refusing to bind" in res.stderr and "server.api_keys" in res.stderr


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.1.2.3", True),
        ("::1", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.0.0.1", False),
        ("127.evil.example", False),
        ("localhost.evil.example", False),
        ("", False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
