"""AggregatorService: the sync request-path API, the report, the status, and the CLI table."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest
from agg_fixtures import FakeClock, load_json

from modelpool.aggregators import AggregatorService, ModelStats, parse_endpoints, render_rank
from modelpool.aggregators.routing_record import ProviderAttempt, RoutingRecord
from modelpool.config.schema import GatewayRankingConfig

MODEL = "deepseek/deepseek-v4.1-flash-1017"
VERCEL = "https://ai-gateway.vercel.sh"


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


def no_session() -> aiohttp.ClientSession:
    raise AssertionError("the fake fetch never needs the HTTP session")


class Fetcher:
    def __init__(self, payload: Any = None) -> None:
        self.payload = payload if payload is not None else load_json("vercel_22_providers.json")
        self.calls: list[tuple[str, str, str, str | None]] = []
        self.gate: asyncio.Event | None = None
        self.fail: Exception | None = None

    async def __call__(self, kind: str, root: str, model: str, api_key: str | None) -> ModelStats:
        self.calls.append((kind, root, model, api_key))
        if self.gate is not None:
            await self.gate.wait()
        if self.fail is not None:
            raise self.fail
        return parse_endpoints(kind, self.payload, model, authenticated=bool(api_key))


def service(
    fetch: Fetcher, clock: FakeClock, cfg: GatewayRankingConfig | None = None
) -> tuple[AggregatorService, dict[str, GatewayRankingConfig]]:
    holder = {"cfg": cfg or GatewayRankingConfig()}
    svc = AggregatorService(no_session, lambda: holder["cfg"], clock, fetch=fetch)
    return svc, holder


async def test_cold_order_is_none_then_the_ranking(clock: FakeClock) -> None:
    fetch = Fetcher()
    svc, _ = service(fetch, clock)
    assert svc.order_for("vercel", VERCEL, None, MODEL, has_tools=True, est_tokens=64_000) is None
    await settle()
    order = svc.order_for("vercel", VERCEL, None, MODEL, has_tools=True, est_tokens=64_000)
    assert (
        order is not None
        and order[0] == "subconscious"
        and order[-4:] == ["groq", "nebius", "lambda", "chutes"]
    )
    assert fetch.calls == [("vercel", "https://ai-gateway.vercel.sh/v1", MODEL, None)]
    # The same aggregator written differently shares one cache.
    assert svc.order_for("vercel", VERCEL + "/v1/", None, MODEL) is not None
    assert len(fetch.calls) == 1


async def test_stats_outage_never_delays_and_sends_nothing(clock: FakeClock) -> None:
    fetch = Fetcher()
    fetch.gate = asyncio.Event()  # the aggregator's stats endpoint hangs
    svc, _ = service(fetch, clock)
    for _ in range(5):
        assert svc.order_for("vercel", VERCEL, "key", MODEL) is None  # request goes out unchanged
        assert svc.prior_tps("vercel", MODEL, VERCEL, "key") is None
    await settle()
    assert len(fetch.calls) == 1
    status = svc.status()
    assert status["aggregators"][0]["models"][MODEL]["refreshing"] is True
    await svc.close()


async def test_disabled_and_non_aggregators(clock: FakeClock) -> None:
    fetch = Fetcher()
    svc, holder = service(fetch, clock, GatewayRankingConfig(enabled=False))
    assert svc.order_for("vercel", VERCEL, None, MODEL) is None
    assert svc.order_for("openai", "https://api.deepseek.com", None, MODEL) is None
    await settle()
    assert fetch.calls == []
    holder["cfg"] = GatewayRankingConfig(enabled=True, min_uptime=80)  # live reload
    svc.order_for("vercel", VERCEL, None, MODEL)
    await settle()
    order = svc.order_for("vercel", VERCEL, None, MODEL)
    assert order is not None and order[2] == "groq"  # 84.5% passes min_uptime 80


async def test_prior_tps(clock: FakeClock) -> None:
    fetch = Fetcher()
    svc, holder = service(fetch, clock)
    assert svc.prior_tps("vercel", MODEL) is None  # nothing cached and no base_url: no traffic either
    await settle()
    assert fetch.calls == []
    assert svc.prior_tps("vercel", MODEL, VERCEL, None) is None  # starts the fetch
    await settle()
    assert svc.prior_tps("vercel", MODEL, VERCEL, None) == 394.0
    assert svc.prior_tps("vercel", MODEL) == 394.0  # any cached aggregator of the kind
    assert svc.prior_ttft_ms("vercel", MODEL) == 310.0
    holder["cfg"] = GatewayRankingConfig(min_uptime=100)  # only 100% providers stay ahead
    assert svc.prior_tps("vercel", MODEL) == 394.0
    assert svc.prior_tps("openrouter", MODEL) is None


async def test_openrouter_key_is_sent_and_rotates(clock: FakeClock) -> None:
    fetch = Fetcher(load_json("openrouter_endpoints.json"))
    svc, _ = service(fetch, clock)
    svc.order_for("openrouter", "https://openrouter.ai/api/v1", "k1", "deepseek/deepseek-v4.1-flash")
    await settle()
    order = svc.order_for("openrouter", "https://openrouter.ai/api/v1", "k2", "deepseek/deepseek-v4.1-flash")
    assert order == ["deepseek", "deepinfra/fp8", "novita"]  # novita: status -2, uptime 71 → back
    svc.refresh()
    svc.order_for("openrouter", "https://openrouter.ai/api/v1", "k2", "deepseek/deepseek-v4.1-flash")
    await settle()
    # A caller without a key (None) does not erase the one learnt from the request path.
    svc.refresh()
    svc.prior_tps("openrouter", "deepseek/deepseek-v4.1-flash", "https://openrouter.ai/api/v1", None)
    await settle()
    assert [c[3] for c in fetch.calls] == ["k1", "k2", "k2"]


async def test_ranking_report_and_cli_table(clock: FakeClock) -> None:
    fetch = Fetcher()
    svc, _ = service(fetch, clock)
    routing = RoutingRecord(
        "subconscious", "subconscious", None, (ProviderAttempt("subconscious", 200, True),)
    )
    svc.observe("sess-1", routing, model=MODEL)
    clock.advance(60)
    svc.observe("sess-1", routing, model=MODEL)
    report = await svc.ranking_report("vercel", VERCEL, None, MODEL)
    assert report["available"] and report["order"][0] == "subconscious" and len(report["rows"]) == 22
    assert report["session"] == "sess-1"
    assert report["served_by"]["provider"] == "subconscious"
    assert report["served_by"]["affinity"]["outcome"] == "pinned"
    assert report["stats_age_s"] == 0

    text = render_rank(report)
    lines = text.splitlines()
    assert lines[0] == f"{MODEL} · vercel · 22 providers · stats 0 s old"
    assert lines[1].split() == ["#", "provider", "tok/s", "TTFT", "uptime", "15m", "notes"]
    assert lines[2].split() == ["1", "subconscious", "394", "310", "ms", "100%"]
    deepseek = next(line for line in lines if " deepseek " in line)
    assert deepseek.rstrip().endswith("first-party")
    fireworks = next(line for line in lines if "fireworks" in line)
    assert fireworks.split()[2:5] == ["—", "—", "—"]
    assert lines[-1].startswith("Served by subconscious (session sess-1). Pinned: session affinity kept")
    assert "uptime 84.5% < 90% over 15 min" in next(line for line in lines if "groq" in line)


async def test_report_when_stats_are_unavailable(clock: FakeClock) -> None:
    fetch = Fetcher()
    fetch.fail = RuntimeError("HTTP 404 from https://ai-gateway.vercel.sh/v1/models/x/y/endpoints: not found")
    svc, _ = service(fetch, clock)
    report = await svc.ranking_report("vercel", VERCEL, None, "x/y")
    assert not report["available"] and report["served_by"] is None
    assert report["error"].startswith("HTTP 404")
    text = render_rank(report)
    assert "Endpoint stats unavailable: HTTP 404" in text
    assert "Requests go out unchanged and the gateway chooses the provider." in text
    assert text.rstrip().endswith("Served by: no reply through this gateway recorded yet.")
    status = svc.status()
    assert status["fetch_failures"] == 1
    assert status["aggregators"][0]["models"]["x/y"]["last_error"].startswith("HTTP 404")


async def test_report_for_a_kind_without_stats(clock: FakeClock) -> None:
    svc, _ = service(Fetcher(), clock)
    report = await svc.ranking_report("openai", "https://api.deepseek.com", None, MODEL)
    assert not report["available"] and "publishes no endpoint stats" in report["error"]


@pytest.mark.parametrize("session", [None, "", "s"])
def test_observe_ignores_missing_pieces(clock: FakeClock, session: str | None) -> None:
    svc, _ = service(Fetcher(), clock)
    assert svc.observe(session, None) is None
    expected = 1 if session else 0
    svc.observe(session, RoutingRecord("a", "a", None))
    assert svc.status()["sessions"] == expected


def test_render_rank_openrouter_without_key() -> None:
    stats = parse_endpoints("openrouter", load_json("openrouter_endpoints_nokey.json"), "deepseek/x")
    rows = [
        {
            "provider": e.slug,
            "tps": e.tps_p50,
            "ttft_ms": e.ttft_p50_ms,
            "uptime_15m": e.uptime_15m,
            "notes": "",
        }
        for e in stats.endpoints
    ]
    report = {
        "model": "deepseek/x",
        "kind": "openrouter",
        "available": True,
        "rows": rows,
        "authenticated": False,
    }
    assert "OpenRouter publishes latency and throughput only to requests with an API key." in render_rank(
        report
    )


async def test_order_follows_the_call_the_config_and_new_stats(clock: FakeClock) -> None:
    fetch = Fetcher()
    svc, holder = service(fetch, clock)
    await svc.ranking_report("vercel", VERCEL, None, MODEL)

    def order(**kw: Any) -> list[str]:
        result = svc.order_for("vercel", VERCEL, None, MODEL, **kw)
        assert result is not None
        return result

    assert order()[-1] == "lambda" and "nebius" not in order()[-2:]
    assert order(est_tokens=32_000)[-1] == "lambda"  # 32k fits a 32k window
    assert order(est_tokens=32_001)[-2:] == ["nebius", "lambda"]
    # Every window is 128k or 32k: all are demoted, so they keep the plain speed order among themselves.
    assert order(est_tokens=200_000)[0] == "subconscious"
    assert order(est_tokens=200_000)[-1] == "fireworks"
    assert order(has_tools=True)[-1] == "chutes"
    assert order()[2] == "sambanova"
    holder["cfg"] = GatewayRankingConfig(min_uptime=80)  # live reload of min_uptime
    assert order()[2] == "groq"
    mutated = order()
    mutated.clear()  # callers get their own list
    assert order()[0] == "subconscious"

    # New stats replace the memoized orders.
    faster = load_json("vercel_22_providers.json")
    for ep in faster["data"]["endpoints"]:
        if ep["provider_name"] == "runinfra":
            ep["throughput_last_1h"] = {"p50": 999, "p95": 1200}
    fetch.payload = faster
    clock.advance(901)
    svc.order_for("vercel", VERCEL, None, MODEL)  # stale: serves the old order, refreshes behind
    await settle()
    assert order()[0] == "runinfra"
