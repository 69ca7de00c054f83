"""Time limits per route (SPEC §3.9), through the real server: a slow-thinking route with its own
`first_byte` is waited for while a fast route's stall is still cut at the global limit; reasoning that
keeps coming keeps an `idle` stream alive; `status` shows each route's limits and their layer."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from routing_helpers import MODEL, admin, ask, config

from gateway_server import GatewayServer
from modelpool.cli.render import console, render_status
from modelpool.sim import Fault, FleetSpec, FleetThread, SimModel, SimProvider

THINK = 2.5  # seconds of silence before the slow route's first reasoning event


def fleet() -> FleetSpec:
    # `fast` answers headers (and its role chunk) at once, then goes silent: a stalled fast route.
    fast = SimProvider(
        "fast",
        models=[SimModel(MODEL, output_tokens=4)],
        ttft=0.002,
        tps=5000.0,
        faults=[Fault("stall", headers=True)],
    )
    # `thinker` is healthy but thinks THINK seconds before its first reasoning event (sim ttft).
    thinker = SimProvider(
        "thinker",
        models=[SimModel(MODEL, output_tokens=4, reasoning_tokens=3, ttft=THINK)],
        tps=5000.0,
    )
    return FleetSpec([fast, thinker])


def pool_config(ft: FleetThread, thinker_limit: dict[str, Any] | None) -> dict[str, Any]:
    cfg = config(ft, retries_per_route=0, provider_order=["fast", "thinker"], sticky=False)
    cfg["timeouts"] = {"first_byte": "1s"}  # the pool is tuned for fast chat models
    for p in cfg["providers"]:
        if p["id"] == "thinker":
            p["timeouts"] = {"idle": "30s"}
            if thinker_limit is not None:
                p["model_info"]["m*"] = {"timeouts": thinker_limit}
    return cfg


def test_a_slow_thinker_with_its_own_first_byte_is_waited_for_while_a_stall_is_cut_at_the_global_limit() -> (
    None
):
    # `first_byte` is a streaming limit (a non-streamed answer is bounded by `response`).
    with FleetThread(fleet()) as ft, GatewayServer(pool_config(ft, {"first_byte": "8s"})) as gw:
        reply = ask(gw, stream=True)
        assert reply.served_by == "thinker/m1"
        assert reply.attempts == 2
        # the fast route was cut as a stall at the pool's 1 s, not at the thinker's 8 s: the failure names
        # the limit applied, and the switch came well before 8 s (a bound a slow machine cannot fake: being
        # slow only makes it later)
        fast = gw.gateway.health.snapshot("fast/m1")
        assert fast.last_error_kind is not None and fast.last_error_kind.value == "network"
        assert fast.last_error == "stall: no upstream event within the first-byte limit of 1 s"
        calls = ft.calls("fast")
        assert len(calls) == 1 and calls[0].disconnected
        assert ft.calls("thinker")[0].time - calls[0].time < 6.0
        assert not ft.calls("thinker")[0].disconnected  # waited for, to the end of its answer
        assert reply.reasoning  # its reasoning arrived after the long silence
        # status: each route's limits in force and the layer each comes from
        rows = {r["route"]: r["timeouts"] for r in admin(gw, "/admin/status")["ranking"]}
        assert rows["thinker/m1"]["first_byte"] == {"seconds": 8.0, "layer": "model_info m*"}
        assert rows["thinker/m1"]["idle"] == {"seconds": 30.0, "layer": "provider"}
        assert rows["thinker/m1"]["connect"]["layer"] == "default"
        assert rows["fast/m1"]["first_byte"] == {"seconds": 1.0, "layer": "default"}
        with console.capture() as shown:
            render_status(admin(gw, "/admin/status"))
        text = shown.get()
        assert "thinker/m1" in text and "8s [model_info m*]" in text and "30s [provider]" in text


def test_without_its_own_first_byte_the_slow_thinker_is_cut_like_a_stall() -> None:
    # The counter-test: the same pool with one global limit cuts the healthy thinker too.
    with FleetThread(fleet()) as ft, GatewayServer(pool_config(ft, None)) as gw:
        with pytest.raises(openai.APIStatusError):
            ask(gw, stream=True)
        thinker = gw.gateway.health.snapshot("thinker/m1")
        assert thinker.last_error == "stall: no upstream event within the first-byte limit of 1 s"


def pace_fleet(pace: float) -> FleetSpec:
    model = SimModel(MODEL, output_tokens=3, reasoning_tokens=6, reasoning_pace=pace)
    return FleetSpec([SimProvider("pondering", models=[model], ttft=0.01, tps=5000.0)])


def test_reasoning_every_half_second_keeps_an_idle_1s_stream_alive() -> None:
    with FleetThread(pace_fleet(0.5)) as ft:
        cfg = config(ft, retries_per_route=0)
        cfg["timeouts"] = {"first_byte": "1s", "idle": "1s"}
        with GatewayServer(cfg) as gw:
            reply = ask(gw, stream=True)
            assert reply.served_by == "pondering/m1"
            assert reply.reasoning and reply.text  # 6 reasoning events over ~3 s, then the answer
            assert not ft.calls("pondering")[0].disconnected


def test_reasoning_slower_than_idle_is_a_stall() -> None:
    # The counter-test: a reasoning gap longer than `idle` is cut.
    with FleetThread(pace_fleet(1.6)) as ft:
        cfg = config(ft, retries_per_route=0)
        cfg["timeouts"] = {"first_byte": "1s", "idle": "1s"}
        with GatewayServer(cfg) as gw:
            with pytest.raises(openai.APIError):
                ask(gw, stream=True)
            health = gw.gateway.health.snapshot("pondering/m1")
            assert health.last_error is not None and "no upstream data for 1 s" in health.last_error
