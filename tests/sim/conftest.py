"""A shared fleet for the sim tests: started once, faults and call records reset around every test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from modelpool.sim import AgentTask, FleetSpec, FleetThread, InnerProvider, SimModel, SimProvider

GW_MODEL = "deepseek/deepseek-v4.1-flash-1017"

# Quick but not fast-mode: pacing and TTFT code paths run, tests stay well under a second each.
_QUICK = {"ttft": 0.001, "tps": 5000.0}


def rich_spec() -> FleetSpec:
    inner = [
        # TTFTs are small so the tests stay quick; the stats publish them as they are.
        InnerProvider("subconscious", tps=394, ttft_ms=3),
        InnerProvider("deepseek", tps=191, ttft_ms=5),
        InnerProvider("baseten", tps=175, ttft_ms=4),
        InnerProvider("fireworks", tps=None),
        InnerProvider("runinfra", tps=42, ttft_ms=9, uptime_15m=88.0),
        InnerProvider("down", tps=300, ttft_ms=1, status=1),
        InnerProvider("notools", tps=350, ttft_ms=1, tools=False),
        InnerProvider("tiny", tps=360, ttft_ms=1, context_length=10),
    ]
    return FleetSpec(
        [
            SimProvider(
                "alpha",
                models=[
                    SimModel("m1", output_tokens=6),
                    SimModel("reasoner", reasoning_tokens=4, output_tokens=5),
                    SimModel("plain", tools=False, efforts=["off", "low", "high"], context_window=50),
                    SimModel("vision", images=True, output_tokens=3),
                    SimModel("embed-1", declared_type="embedding"),
                ],
                **_QUICK,
            ),
            SimProvider("beta", models=[SimModel("m1", output_tokens=6)], **_QUICK),
            SimProvider("keyed", models=[SimModel("m1", output_tokens=2)], api_key="sk-sim-secret", **_QUICK),
            SimProvider(
                "claude",
                kind="anthropic",
                models=[
                    SimModel("m1", output_tokens=5),
                    SimModel("thinker", reasoning_tokens=3, output_tokens=4),
                ],
                **_QUICK,
            ),
            SimProvider(
                "omni",  # a first-party-like route that speaks all three dialects natively
                dialects=("openai", "anthropic", "responses"),
                models=[
                    SimModel("m1", output_tokens=5),
                    SimModel("thinker", reasoning_tokens=3, output_tokens=4),
                    SimModel("searcher", output_tokens=4, web_search=True, cached_tokens=2),
                    SimModel("cached", output_tokens=3, cached_tokens=5, cache_creation_tokens=7),
                    SimModel("agent", agent=AgentTask(), output_tokens=4),
                    SimModel("agent-thinker", agent=AgentTask(), reasoning_tokens=2),
                ],
                **_QUICK,
            ),
            SimProvider(
                "vercel",
                kind="vercel",
                models=[SimModel(GW_MODEL, output_tokens=5), SimModel("agent", agent=AgentTask())],
                inner=inner,
                default_inner="baseten",
                ttft=0.001,
                tps=5000.0,
            ),
        ],
        seed=3,
    )


@pytest.fixture(scope="session")
def fleet_thread() -> Iterator[FleetThread]:
    with FleetThread(rich_spec()) as ft:
        yield ft


@pytest.fixture
def fleet(fleet_thread: FleetThread) -> Iterator[FleetThread]:
    for pid in fleet_thread.fleet.provider_ids:
        fleet_thread.set_faults(pid, [])
    fleet_thread.reset_calls()
    yield fleet_thread
    for pid in fleet_thread.fleet.provider_ids:
        fleet_thread.set_faults(pid, [])
