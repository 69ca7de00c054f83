"""Fleet lifecycle, config export, presets, fast mode, `run_sim` and the traffic generator."""

from __future__ import annotations

import asyncio
import contextlib
import io
import time
from pathlib import Path

import aiohttp
import orjson
import pytest
import yaml

from modelpool.config.schema import Config
from modelpool.sim import (
    Fault,
    Fleet,
    FleetSpec,
    FleetThread,
    SimModel,
    SimProvider,
    bench_fleet,
    demo_fleet,
    expected_text,
    preset,
    run_sim,
    run_traffic,
    two_route_fleet,
)

USER = [{"role": "user", "content": "hi"}]


async def post_json(http: aiohttp.ClientSession, url: str, body: dict) -> tuple[int, dict]:
    async with http.post(url, data=orjson.dumps(body)) as r:
        return r.status, orjson.loads(await r.read())


async def test_in_loop_fleet_and_base_urls() -> None:
    spec = FleetSpec(
        [
            SimProvider("o", models=[SimModel("m1", output_tokens=3)], ttft=0, tps=0),
            SimProvider("a", kind="anthropic", models=[SimModel("m1")]),
            SimProvider("v", kind="vercel", models=[SimModel("x/y")]),
        ]
    )
    async with Fleet(spec) as fleet, aiohttp.ClientSession() as http:
        assert fleet.base_url("o").endswith("/v1") and fleet.base_url("v").endswith("/v1")
        assert not fleet.base_url("a").endswith("/v1")
        assert fleet.base_url("o") == fleet.root_url("o") + "/v1"
        assert len({fleet.port(p) for p in ("o", "a", "v")}) == 3
        status, body = await post_json(
            http, fleet.base_url("o") + "/chat/completions", {"model": "m1", "messages": USER}
        )
        assert status == 200 and body["choices"][0]["message"]["content"] == expected_text("o", "m1", 3)
        # an anthropic provider has no chat-completions endpoint, as in real life
        status, _ = await post_json(http, fleet.root_url("a") + "/v1/chat/completions", {"model": "m1"})
        assert status == 404
    with pytest.raises(KeyError):
        fleet.base_url("nope")


def test_to_config_validates_against_the_schema() -> None:
    with FleetThread(demo_fleet()) as ft:
        cfg = ft.to_config(state={"backend": "memory"})
        parsed = Config.model_validate(cfg)
        ids = [p.id for p in parsed.providers]
        assert ids == ["vercel", "deepseek", "workbuddy"]
        vercel = parsed.providers[0]
        assert vercel.kind == "vercel" and vercel.base_url == ft.base_url("vercel")
        assert vercel.models == ["deepseek/deepseek-v4.1-flash-1017"]
        info = parsed.providers[1].model_info["deepseek-flash"]
        assert info.context_window == 1_000_000 and info.efforts == ["off", "high", "max"]
        assert "model_info" not in ft.to_config(model_info=False)["providers"][0]
        assert [p["id"] for p in ft.to_config(providers=["deepseek"])["providers"]] == ["deepseek"]
    keyed = FleetSpec([SimProvider("k", models=[SimModel("m")], api_key="sk-1")])
    with FleetThread(keyed) as ft:
        assert ft.to_config()["providers"][0]["api_key"] == "sk-1"


def test_presets() -> None:
    demo = demo_fleet()
    vercel = demo.provider("vercel")
    speeds = [i.tps for i in vercel.inner if i.tps is not None]
    assert len(vercel.inner) == 22 and min(speeds) == 42 and max(speeds) == 394
    names = {i.name: i for i in vercel.inner}
    assert names["subconscious"].tps == 394 and names["runinfra"].tps == 42
    assert vercel.default_inner == "baseten" and names["baseten"].tps == 175
    assert names["deepseek"].tps == 191 and any(i.tps is None for i in vercel.inner)
    assert demo.provider("deepseek").models[0].id == "deepseek-flash"
    assert demo.provider("workbuddy").models[0].id == "deepseek-v4.1-flash"
    assert all(0.2 <= p.ttft <= 0.8 for p in demo.providers)
    assert [p.id for p in two_route_fleet().providers] == ["alpha", "beta"]
    assert bench_fleet().fast and preset("two_route").providers[0].id == "alpha"
    bench = {p.id: p.speaks for p in bench_fleet().providers}
    assert list(bench)[:4] == ["alpha", "beta", "anthro", "vercel"]  # existing places kept
    assert bench["omni"] == ("openai", "anthropic", "responses")
    agent = {p.id: p.speaks for p in preset("agent").providers}
    assert agent == {
        "chatonly": ("openai",),
        "anthropic": ("anthropic",),
        "responses": ("openai", "responses"),
        "firstparty": ("openai", "anthropic"),
        "vercel": ("openai", "anthropic", "responses"),
    }
    assert all(m.agent is not None for p in preset("agent").providers for m in p.models)
    with pytest.raises(KeyError):
        preset("nope")


async def test_fast_mode_serves_500_sequential_calls() -> None:
    async with Fleet(bench_fleet()) as fleet, aiohttp.ClientSession() as http:
        url = fleet.base_url("alpha") + "/chat/completions"
        body = orjson.dumps({"model": "m1", "messages": USER})
        for _ in range(500):
            async with http.post(url, data=body) as r:
                assert r.status == 200
                await r.read()
        assert len(fleet.calls("alpha")) == 500
        async with http.post(url, data=orjson.dumps({"model": "m1", "messages": USER, "stream": True})) as r:
            raw = (await r.read()).decode()
        assert raw.endswith("data: [DONE]\n\n") and raw.count("tok") == 24


async def test_fast_mode_streams_stay_correct_for_every_kind() -> None:
    async with Fleet(bench_fleet()) as fleet, aiohttp.ClientSession() as http:
        body = {"model": "m1", "max_tokens": 50, "messages": USER, "stream": True}
        async with http.post(fleet.base_url("anthro") + "/v1/messages", data=orjson.dumps(body)) as r:
            raw = (await r.read()).decode()
        assert raw.rstrip().endswith('{"type":"message_stop"}')
        gw = {"model": "deepseek/deepseek-v4.1-flash-1017", "messages": USER}
        status, reply = await post_json(http, fleet.base_url("vercel") + "/chat/completions", gw)
        assert status == 200 and fleet.calls("vercel")[0].inner == "mid"
        assert (
            reply["choices"][0]["message"]["provider_metadata"]["gateway"]["routing"]["finalProvider"]
            == "mid"
        )


async def test_ttft_and_tps_pace_the_stream() -> None:
    spec = FleetSpec([SimProvider("p", models=[SimModel("m", output_tokens=20)], ttft=0.15, tps=100)])
    async with Fleet(spec) as fleet, aiohttp.ClientSession() as http:
        body = orjson.dumps({"model": "m", "messages": USER, "stream": True})
        started = time.monotonic()
        first_content = None
        async with http.post(fleet.base_url("p") + "/chat/completions", data=body) as r:
            async for line in r.content:
                if first_content is None and b'"content":"[p:m] tok0"' in line:
                    first_content = time.monotonic() - started
        total = time.monotonic() - started
    assert first_content is not None and first_content >= 0.15
    assert total >= 0.15 + 19 / 100  # lower bounds only: sleeps never end early


async def test_stop_ends_stalled_calls() -> None:
    spec = FleetSpec([SimProvider("p", models=[SimModel("m")], faults=[Fault("stall", headers=True)])])
    fleet = await Fleet(spec).start()
    async with aiohttp.ClientSession() as http:
        url = fleet.base_url("p") + "/chat/completions"
        resp = await http.post(url, data=orjson.dumps({"model": "m", "messages": USER, "stream": True}))
        assert resp.status == 200
        await asyncio.wait_for(fleet.stop(), timeout=5)
        with contextlib.suppress(aiohttp.ClientError):
            await asyncio.wait_for(resp.read(), timeout=5)
        resp.release()


async def test_run_sim_prints_urls_and_writes_config(tmp_path: Path) -> None:
    out = io.StringIO()
    ready = asyncio.Event()
    config_path = tmp_path / "sim.yaml"
    task = asyncio.create_task(run_sim("two-route", config_out=config_path, out=out, ready=ready))
    await asyncio.wait_for(ready.wait(), timeout=10)
    cfg = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    Config.model_validate(cfg)
    urls = [p["base_url"] for p in cfg["providers"]]
    for url in urls:
        assert url in out.getvalue()
    async with aiohttp.ClientSession() as http:
        status, body = await post_json(http, urls[0] + "/chat/completions", {"model": "m1", "messages": USER})
    assert status == 200 and body["choices"][0]["message"]["content"].startswith("[alpha:m1]")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_traffic_generator_counts_and_stops_by_itself() -> None:
    spec = FleetSpec([SimProvider("alpha", models=[SimModel("m1")])], fast=True)
    async with Fleet(spec) as fleet:
        stats = await asyncio.wait_for(
            run_traffic(fleet.base_url("alpha"), "m1", rate=40, duration=0.5, sessions=3, api_key="k"),
            timeout=10,
        )
        assert stats.sent >= 5 and stats.ok == stats.sent and stats.incomplete == 0
        calls = fleet.calls("alpha")
        assert len({c.headers["x-session-id"] for c in calls}) == 3
        later = [c for c in calls if c.body and len(c.body["messages"]) > 1]
        assert later and later[0].body["messages"][1]["role"] == "assistant"  # conversations grow

        fleet.set_faults("alpha", [Fault("cut", after_tokens=2, every=2), Fault("quota", every=3)])
        stats = await run_traffic(
            fleet.root_url("alpha"), "m1", rate=40, duration=0.4, sessions=2, api_key=None
        )
        assert stats.ok > 0 and stats.http_errors + stats.incomplete + stats.connection_errors > 0
        assert stats.ok + stats.http_errors + stats.incomplete + stats.connection_errors == stats.sent
        assert stats.statuses[200] >= stats.ok and stats.summary()["sent"] == stats.sent
