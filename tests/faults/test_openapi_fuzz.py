"""Schemathesis against the admin API (issue #10): the document the live gateway serves at
`/admin/openapi.json` drives generated requests — valid and invalid bodies, parameters and paths — at the
real server (uvicorn over the simulated fleet with an aggregator), and none may get a 5xx.

`MODELPOOL_SCHEMA_EXAMPLES` sets the examples per operation (CI default 25; bench/fuzz.py runs thousands).
`/admin/events` is left out: it is a server-sent event stream that never ends by design, which a
request-response fuzzer would wait on forever; its auth and shape are tested in tests/security.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import FleetThread, preset

EXAMPLES = int(os.environ.get("MODELPOOL_SCHEMA_EXAMPLES", "25"))
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


@pytest.fixture(scope="module")
def gw() -> Iterator[GatewayServer]:
    # The bench fleet: two OpenAI routes and an Anthropic route for m1, and an aggregator (ranking routes).
    with FleetThread(preset("bench")) as ft:
        cfg = ft.to_config(
            server={"admin_token": ADMIN_TOKEN},
            state={"backend": "memory"},
            pool={"strategy": "priority", "retry_backoff": "1ms"},
            holidays={"source": "bundled"},
        )
        with GatewayServer(cfg) as server:
            yield server


@pytest.fixture(scope="module")
def admin_schema(gw: GatewayServer) -> schemathesis.BaseSchema:
    return schemathesis.openapi.from_url(gw.url + "/admin/openapi.json", headers=ADMIN)


schema = schemathesis.pytest.from_fixture("admin_schema").exclude(path="/admin/events")


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_no_admin_request_gets_a_5xx(case: schemathesis.Case, gw: GatewayServer) -> None:
    case.call_and_validate(base_url=gw.url, headers=ADMIN, checks=[not_a_server_error], timeout=30)
