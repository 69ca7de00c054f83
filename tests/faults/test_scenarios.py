"""Issue #10, fault scenarios: every scenario of `scenario_table` × route kind (OpenAI-compatible or
Anthropic upstream) × ingress dialect (Chat Completions, Messages, Responses — official SDKs) × streamed or
not, through the real gateway on loopback in front of the simulated fleet.

Each run asserts what the client saw (the exact text of one reply — or, after the commit point, a prefix
of it followed by a detectable error and no success terminator — or an error naming every route and kind)
and what the gateway recorded (`x-modelpool-*` headers, the final `modelpool` metadata, failure events,
the route's health and rest, and the upstream requests the fleet received). One fleet and one gateway per
module; the faults are scripted per test.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import orjson
import pytest
from scenario_clients import DIALECTS, Seen, call
from scenario_report import client_cell
from scenario_table import HUGE_TOKENS, SCENARIOS, TOKENS, Expect, Scenario

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider
from modelpool.sim.text import content_tokens

# route kind → (primary, secondary, model, huge model)
ROUTES = {"openai": ("alpha", "beta", "m1", "h1"), "anthropic": ("gamma", "delta", "m2", "h2")}
ZONE = ZoneInfo("Asia/Shanghai")
START = datetime(2025, 3, 10, 14, 0, tzinfo=ZONE).timestamp()  # a Monday, 14:00
HOUR = 3600.0


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


Rig = tuple[FleetThread, GatewayServer, Clock]


def _provider(pid: str, kind: str, model: str, huge: str) -> SimProvider:
    return SimProvider(
        pid,
        kind=kind,  # type: ignore[arg-type]
        models=[
            SimModel(model, output_tokens=TOKENS),
            SimModel(huge, output_tokens=HUGE_TOKENS, tps=math.inf),
        ],
        ttft=0.002,
        tps=5000.0,
    )


def fleet_spec() -> FleetSpec:
    return FleetSpec(
        [_provider(pid, kind, model, huge) for kind, (p, s, model, huge) in ROUTES.items() for pid in (p, s)]
    )


OBSERVED: list[dict[str, Any]] = []


@pytest.fixture(scope="module", autouse=True)
def _report() -> Iterator[None]:
    """MODELPOOL_FAULTS_REPORT=FILE keeps what every run observed (docs/faults.md is rendered from it)."""
    yield
    target = os.environ.get("MODELPOOL_FAULTS_REPORT")
    if target:
        Path(target).write_bytes(orjson.dumps(OBSERVED, option=orjson.OPT_INDENT_2))


@pytest.fixture(scope="module")
def local_zone() -> Iterator[None]:
    """Quota rests end at the reset hour of the machine's zone: pin it for the module."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "Asia/Shanghai"
    time.tzset()
    yield
    if before is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = before
    time.tzset()


@pytest.fixture(scope="module")
def rig(local_zone: None) -> Iterator[Rig]:
    clock = Clock()
    with FleetThread(fleet_spec()) as ft:
        cfg = ft.to_config()
        cfg["state"] = {"backend": "memory"}
        cfg["server"] = {"admin_token": ADMIN_TOKEN}
        cfg["pool"] = {
            "strategy": "priority",
            "provider_order": [p for p, *_ in ROUTES.values()],
            "retries_per_route": 1,
            "retry_backoff": "1ms",
            "sticky": False,
            "cooldown": "60s",
            "quota_reset_hour": 3,
            "quota_cooldown": "1h",
        }
        # Short timeouts keep the stalls quick; the trickle's 0.2 s gaps stay under the idle timeout.
        # `first_byte` leaves room for a loaded CI machine: at 400 ms a healthy route's first event, late
        # behind the rest of a full suite's threads, was taken for a stall (an extra attempt).
        cfg["timeouts"] = {"connect": "1s", "first_byte": "1500ms", "idle": "500ms", "response": "2s"}
        with GatewayServer(cfg, clock=clock) as gw:
            yield ft, gw, clock


@pytest.fixture
def fresh(rig: Rig) -> Iterator[Rig]:
    ft, gw, clock = rig
    clock.now = START
    for pid in ft.fleet.provider_ids:
        ft.set_faults(pid, [])
    ft.reset_calls()
    reset = httpx.post(gw.url + "/admin/health/reset", headers=gw.admin_headers(), json={}, timeout=5)
    reset.raise_for_status()
    yield rig
    for pid in ROUTES["openai"][:1] + ROUTES["anthropic"][:1]:  # only a primary is ever taken down
        ft.set_down(pid, False)


def _cases() -> Iterator[Any]:
    for sc in SCENARIOS:
        for kind in sc.kinds:
            for dialect in DIALECTS:
                for stream in sc.modes:
                    mode = "stream" if stream else "once"
                    yield pytest.param(sc, kind, dialect, stream, id=f"{sc.id}-{kind}-{dialect}-{mode}")


@pytest.mark.parametrize(("sc", "kind", "dialect", "stream"), list(_cases()))
def test_scenario(fresh: Rig, sc: Scenario, kind: str, dialect: str, stream: bool) -> None:
    ft, gw, clock = fresh
    p, s, model, huge = ROUTES[kind]
    model = huge if sc.huge else model
    role = {"P": f"{p}/{model}", "S": f"{s}/{model}"}
    ft.set_faults(p, sc.primary)
    ft.set_faults(s, sc.secondary)
    if sc.primary_down:
        ft.set_down(p)
    mark = max((e["id"] for e in gw.gateway.events.recent(500)), default=0)
    exp = sc.expect(stream)
    session = f"{sc.id}-{kind}-{dialect}-{stream}"
    seen = [call(gw, dialect, stream, model, f"{session}-{i}") for i in range(sc.repeat)]

    row: dict[str, Any] = {
        "scenario": sc.id,
        "kind": kind,
        "dialect": dialect,
        "mode": "stream" if stream else "once",
        "note": sc.note,
        "client": client_cell(seen, timed=exp.min_elapsed > 0),
        "passed": False,
    }
    OBSERVED.append(row)
    n = HUGE_TOKENS if sc.huge else TOKENS
    for i, one in enumerate(seen):
        attempts = exp.attempts[i] if isinstance(exp.attempts, tuple) else exp.attempts
        check_client(one, exp, role, {"P": p, "S": s}, model, n, attempts)
    row["record"] = check_record(ft, gw, exp, role, (p, s), mark)
    if sc.id == "quota-wall":
        check_quota_rest_ends_at_the_reset_hour(gw, clock, role["P"])
    row["passed"] = True


def check_client(
    seen: Seen,
    exp: Expect,
    role: dict[str, str],
    pid: dict[str, str],
    model: str,
    n: int,
    attempts: int | None,
) -> None:
    """What the client saw, and the headers and metadata that came with it."""
    assert seen.elapsed >= exp.min_elapsed, f"answered after {seen.elapsed:.2f} s < {exp.min_elapsed} s"
    if exp.outcome == "error":
        assert seen.status == exp.status and not seen.completed and seen.text == ""
        assert seen.error is not None
        for who, kind in exp.failures:
            assert f"{role[who]}: {kind}" in seen.error, seen.error
        return
    assert seen.status == 200, seen.error
    assert seen.headers.get("x-modelpool-attempts") == str(attempts)
    assert seen.headers.get("x-modelpool-route") == role["P" if exp.outcome == "cut" else exp.served]
    full = content_tokens(pid["P" if exp.outcome == "cut" else str(exp.served)], model, n)
    if exp.outcome == "cut":
        # after the commit point: exactly the tokens that were streamed, once; then an error, no success
        assert seen.text == "".join(full[: exp.prefix])
        assert seen.error is not None and not seen.completed and not seen.terminated
        return
    assert seen.error is None and seen.completed
    assert seen.text == "".join(full), "the answer is not exactly one whole reply"
    if seen.stream:
        assert seen.terminated
        assert seen.meta is not None and seen.meta["route"] == role[str(exp.served)]
        assert seen.meta["attempts"] == attempts
    elif seen.meta is not None:  # translated non-stream bodies carry the metadata too
        assert seen.meta["route"] == role[str(exp.served)] and seen.meta["attempts"] == attempts
    switched = seen.headers.get("x-modelpool-switched")
    if exp.switched is None:
        assert switched is None
    else:
        assert switched == f"{role['P']} → {role['S']} ({exp.switched})"


def check_record(
    ft: FleetThread, gw: GatewayServer, exp: Expect, role: dict[str, str], pids: tuple[str, str], mark: int
) -> dict[str, Any]:
    """What the gateway recorded: failure events, the primary's health and rest, the upstream requests.
    Polled briefly: after a post-commit error the client may read the error before the walk notes it."""
    want = [(role[who], kind) for who, kind in exp.failures]
    deadline = time.monotonic() + 5
    while True:
        events = [e for e in gw.gateway.events.recent(500) if e["id"] > mark and e["type"] == "failure"]
        got = [(e["route"], e["kind"]) for e in events]
        if got == want or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert got == want
    calls = tuple(len(ft.calls(pid)) for pid in pids)
    row = _route_row(gw, role["P"])
    record = {"failures": got, "calls": calls, "mark": row["mark"], "rest": row["rest_remaining"]}
    assert calls == exp.calls
    assert row["mark"] == exp.mark
    if exp.failures and exp.failures[0][0] == "P":
        assert row["last_error_kind"] == exp.failures[0][1]
    assert row["rest_remaining"] >= exp.rest_at_least
    return record


def check_quota_rest_ends_at_the_reset_hour(gw: GatewayServer, clock: Clock, route: str) -> None:
    assert _route_row(gw, route)["rest_remaining"] == 13 * HOUR  # 14:00 → 03:00 the next day
    clock.now = datetime(2025, 3, 11, 2, 59, tzinfo=ZONE).timestamp()
    assert _route_row(gw, route)["mark"] == "QUOTA-REST"
    clock.now = datetime(2025, 3, 11, 3, 0, 1, tzinfo=ZONE).timestamp()
    assert _route_row(gw, route)["mark"] is None


def _route_row(gw: GatewayServer, route: str) -> dict[str, Any]:
    resp = httpx.get(gw.url + "/admin/status", headers=gw.admin_headers(), timeout=5)
    resp.raise_for_status()
    return next(r for r in resp.json()["ranking"] if r["route"] == route)
