"""Simulated provider fleet (SPEC §10): real HTTP servers on loopback that behave like LLM providers.

Used by `modelpool demo`, the test-suite and the benchmarks::

    from modelpool.sim import Fault, FleetSpec, FleetThread, SimModel, SimProvider, expected_text

    spec = FleetSpec([SimProvider("alpha", models=[SimModel("m1")], faults=[Fault("quota", times=1)])])
    with FleetThread(spec) as ft:
        base = ft.base_url("alpha")  # http://127.0.0.1:PORT/v1
"""

from __future__ import annotations

from modelpool.sim.fleet import Fleet, FleetThread
from modelpool.sim.presets import agent_fleet, bench_fleet, demo_fleet, preset, two_route_fleet
from modelpool.sim.records import CallRecord
from modelpool.sim.runner import run_sim
from modelpool.sim.spec import (
    AgentTask,
    Fault,
    FleetSpec,
    InnerProvider,
    RateLimit,
    SimModel,
    SimProvider,
    TtftTail,
)
from modelpool.sim.text import expected_reasoning, expected_text, expected_tool_arguments
from modelpool.sim.traffic import TrafficStats, run_traffic

__all__ = [
    "AgentTask",
    "CallRecord",
    "Fault",
    "Fleet",
    "FleetSpec",
    "FleetThread",
    "InnerProvider",
    "RateLimit",
    "SimModel",
    "SimProvider",
    "TrafficStats",
    "TtftTail",
    "agent_fleet",
    "bench_fleet",
    "demo_fleet",
    "expected_reasoning",
    "expected_text",
    "expected_tool_arguments",
    "preset",
    "run_sim",
    "run_traffic",
    "two_route_fleet",
]
