"""Against the simulated Vercel-like aggregator over loopback: real HTTP, real endpoint format, real records.

Stats are fetched with aiohttp through `AggregatorService` (the code path the gateway uses), the order is
injected into a real request, and the routing record is read back from the real stream.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import orjson
import pytest

from modelpool.aggregators import (
    AggregatorService,
    StatsUnavailable,
    fetch_endpoint_stats,
    inject_order,
    routing_from_sse_data,
)
from modelpool.config.schema import GatewayRankingConfig
from modelpool.protocols.sse import SSEParser
from modelpool.sim import Fault, FleetSpec, FleetThread, InnerProvider, SimModel, SimProvider, demo_fleet
from modelpool.sim.presets import DEMO_MODEL

MODEL = "deepseek/deepseek-v4.1-flash-1017"
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]


def small_spec() -> FleetSpec:
    """Every demotion rule and a null-stats provider, in fast mode (no pacing sleeps)."""
    inner = [
        InnerProvider("slowpoke", tps=40, ttft_ms=900),
        InnerProvider("fast", tps=400, ttft_ms=200),
        InnerProvider("quiet", tps=None),  # no recent traffic: all metrics null
        InnerProvider("deepseek", tps=190, ttft_ms=500),  # first-party
        InnerProvider("down", tps=500, ttft_ms=100, status=1),
        InnerProvider("flaky", tps=450, ttft_ms=150, uptime_15m=70.0),
        InnerProvider("notools", tps=420, ttft_ms=150, tools=False),
        InnerProvider("tiny", tps=410, ttft_ms=150, context_length=1000),
        InnerProvider("mid", tps=200, ttft_ms=300),
    ]
    vercel = SimProvider(
        "vercel",
        kind="vercel",
        models=[SimModel(MODEL, output_tokens=5)],
        inner=inner,
        default_inner="mid",
        affinity_ttl=300.0,
    )
    return FleetSpec([vercel], fast=True)


@pytest.fixture(scope="module")
def small_fleet() -> Iterator[FleetThread]:
    with FleetThread(small_spec()) as ft:
        yield ft


@pytest.fixture
def small(small_fleet: FleetThread) -> FleetThread:
    small_fleet.reset_calls()
    small_fleet.set_faults("vercel", [])
    return small_fleet


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


def make_service(http: aiohttp.ClientSession, **cfg: Any) -> AggregatorService:
    config = GatewayRankingConfig(**cfg)
    return AggregatorService(lambda: http, lambda: config)


async def test_demo_fleet_22_providers_real_format(http: aiohttp.ClientSession) -> None:
    with FleetThread(demo_fleet()) as ft:
        svc = make_service(http)
        report = await svc.ranking_report("vercel", ft.root_url("vercel"), None, DEMO_MODEL)
        assert report["available"] and len(report["rows"]) == 22
        rows = {r["provider"]: r for r in report["rows"]}
        assert rows["fireworks"]["tps"] is None and rows["fireworks"]["uptime_15m"] is None
        assert rows["deepseek"]["first_party"] is True
        assert report["order"][:3] == ["subconscious", "cerebras", "sambanova"]
        assert report["order"][-1] == "groq"  # uptime 84.5 < 90
        with_tools = svc.order_for("vercel", ft.base_url("vercel"), None, DEMO_MODEL, has_tools=True)
        assert with_tools is not None and with_tools[-2:] == ["groq", "chutes"]
        assert report["best_tps"] == svc.prior_tps("vercel", DEMO_MODEL) == 394.0
        await svc.close()


async def test_every_rule_through_the_real_endpoint(small: FleetThread, http: aiohttp.ClientSession) -> None:
    stats = await fetch_endpoint_stats(http, "vercel", small.base_url("vercel"), MODEL)
    assert len(stats.endpoints) == 9
    svc = make_service(http)
    await svc.ranking_report("vercel", small.root_url("vercel"), None, MODEL)
    order = svc.order_for("vercel", small.root_url("vercel"), None, MODEL, has_tools=True, est_tokens=5000)
    assert order == ["fast", "mid", "deepseek", "slowpoke", "quiet", "down", "flaky", "notools", "tiny"]
    await svc.close()


async def test_unknown_model_is_a_404_failure(small: FleetThread, http: aiohttp.ClientSession) -> None:
    with pytest.raises(StatsUnavailable, match=r"HTTP 404.*not found"):
        await fetch_endpoint_stats(http, "vercel", small.base_url("vercel"), "nobody/nothing")


async def stream_chat(
    http: aiohttp.ClientSession, ft: FleetThread, body: dict[str, Any], session: str
) -> tuple[list[bytes], Any]:
    url = ft.base_url("vercel") + "/chat/completions"
    async with http.post(url, data=orjson.dumps(body), headers={"x-session-id": session}) as resp:
        assert resp.status == 200
        raw = await resp.read()
    events = SSEParser().feed(raw)
    record = None
    for ev in events:  # what a relay does: look at each event as it passes, change nothing
        record = routing_from_sse_data(ev.data) or record
    return [ev.data for ev in events], record


async def test_injected_order_is_honoured_and_the_record_says_who_served(
    small: FleetThread, http: aiohttp.ClientSession
) -> None:
    svc = make_service(http)
    await svc.ranking_report("vercel", small.root_url("vercel"), None, MODEL)
    order = svc.order_for("vercel", small.root_url("vercel"), None, MODEL)
    assert order is not None and order[:3] == ["notools", "tiny", "fast"]  # a plain, short call
    order = svc.order_for("vercel", small.root_url("vercel"), None, MODEL, has_tools=True, est_tokens=5000)
    assert order is not None and order[0] == "fast"
    body = {"model": MODEL, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    sent = inject_order(body, "vercel", order)
    assert sent is not None

    data, record = await stream_chat(http, small, sent, "sess-a")
    assert data[-1] == b"[DONE]"
    assert small.calls("vercel")[-1].inner == "fast"
    assert small.calls("vercel")[-1].body["providerOptions"]["gateway"]["order"] == order
    assert record is not None and record.final_provider == "fast" and record.session_id == "sess-a"
    svc.observe("sess-a", record, model=MODEL)
    first = svc.explain("sess-a")
    assert first is not None and first.outcome == "new pick"

    # Second message: affinity keeps the session on `fast` even when our order now says otherwise.
    reordered = inject_order(body, "vercel", ["mid", "fast"])
    assert reordered is not None
    _, record2 = await stream_chat(http, small, reordered, "sess-a")
    assert (
        record2 is not None and record2.final_provider == "fast" and record2.affinity_outcome == "confirmed"
    )
    svc.observe("sess-a", record2, model=MODEL)
    second = svc.explain("sess-a")
    assert second is not None and second.outcome == "pinned"
    await svc.close()


async def test_fallback_through_the_sim(small: FleetThread, http: aiohttp.ClientSession) -> None:
    small.set_faults("vercel", [Fault("server_error", inner="fast", status=503, times=1)])
    svc = make_service(http)
    body = {"model": MODEL, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    sent = inject_order(body, "vercel", ["fast", "mid"])
    assert sent is not None
    _, record = await stream_chat(http, small, sent, "sess-b")
    assert record is not None
    assert [(a.provider, a.status) for a in record.attempts] == [("fast", 503), ("mid", 200)]
    svc.observe("sess-b", record, model=MODEL)
    e = svc.explain("sess-b")
    assert e is not None and e.outcome == "fallback"
    assert e.sentence.startswith("Fallback: fast failed (503), so mid served the reply")


async def test_anthropic_message_delta_and_non_stream_bodies(
    small: FleetThread, http: aiohttp.ClientSession
) -> None:
    root = small.root_url("vercel")
    body = {"model": MODEL, "max_tokens": 32, "messages": [{"role": "user", "content": "hi"}]}
    sent = inject_order(body, "vercel", ["deepseek"])
    assert sent is not None

    # Distinct sessions: the sim fingerprints "hi" into one session and its affinity would keep it.
    def sid(name: str) -> dict[str, str]:
        return {"x-session-id": name}

    async with http.post(
        root + "/v1/messages", data=orjson.dumps({**sent, "stream": True}), headers=sid("d1")
    ) as resp:
        raw = await resp.read()
    events = SSEParser().feed(raw)
    found = [(ev.event, rec) for ev in events if (rec := routing_from_sse_data(ev.data)) is not None]
    assert [e for e, _ in found] == ["message_delta"]
    assert found[0][1].final_provider == "deepseek"

    async with http.post(root + "/v1/messages", data=orjson.dumps(sent), headers=sid("d2")) as resp:
        whole = await resp.read()
    rec = routing_from_sse_data(whole)
    assert rec is not None and rec.final_provider == "deepseek"

    chat = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
    sent_chat = inject_order(chat, "vercel", ["slowpoke"])
    assert sent_chat is not None
    async with http.post(
        root + "/v1/chat/completions", data=orjson.dumps(sent_chat), headers=sid("d3")
    ) as resp:
        whole = await resp.read()
    rec = routing_from_sse_data(whole)
    assert rec is not None and rec.final_provider == "slowpoke"


async def test_tools_call_gets_a_tool_capable_head(small: FleetThread, http: aiohttp.ClientSession) -> None:
    svc = make_service(http)
    await svc.ranking_report("vercel", small.root_url("vercel"), None, MODEL)
    order = svc.order_for("vercel", small.root_url("vercel"), None, MODEL, has_tools=True)
    assert order is not None
    body = {"model": MODEL, "stream": True, "tools": TOOLS, "messages": [{"role": "user", "content": "hi"}]}
    sent = inject_order(body, "vercel", order)
    assert sent is not None
    _, record = await stream_chat(http, small, sent, "sess-c")
    # notools (420 tok/s) is demoted for a call with tools: tiny (410, context ample for "hi") leads.
    assert order[0] == "tiny" and order[-1] == "notools"
    assert record is not None and record.final_provider == "tiny"
    await svc.close()
