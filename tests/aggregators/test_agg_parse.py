"""Endpoint-stats parsing (Vercel and OpenRouter shapes) and the stats URLs."""

from __future__ import annotations

from typing import Any

import pytest
from agg_fixtures import load_json

from modelpool.aggregators import EndpointStats, StatsUnavailable, parse_endpoints, stats_url


def by_slug(stats: Any) -> dict[str, EndpointStats]:
    return {ep.slug: ep for ep in stats.endpoints}


def test_fixture_a_real_vercel_shape_with_nulls(fixture_a: Any) -> None:
    stats = parse_endpoints("vercel", fixture_a, "deepseek/deepseek-v3.2-thinking")
    assert [ep.slug for ep in stats.endpoints] == ["bedrock", "fireworks", "novita"]
    eps = by_slug(stats)
    assert eps["bedrock"] == EndpointStats(
        slug="bedrock",
        name="bedrock",
        tps_p50=42.0,
        ttft_p50_ms=5242.0,
        uptime_15m=100.0,
        status_active=True,
        deprecated=False,
        tools=True,
        context_length=128000,
    )
    # No recent traffic: every metric is null, the endpoint is still listed and still routable.
    fw = eps["fireworks"]
    assert (fw.tps_p50, fw.ttft_p50_ms, fw.uptime_15m) == (None, None, None)
    assert fw.status_active and fw.tools and fw.context_length == 163000
    assert eps["novita"].ttft_p50_ms == 1371.5 and eps["novita"].tps_p50 == 29.0


def test_22_provider_fixture_parses_every_endpoint(vercel_22: Any) -> None:
    stats = parse_endpoints("vercel", vercel_22, "deepseek/deepseek-v4.1-flash-1017")
    eps = by_slug(stats)
    assert len(eps) == 22
    assert eps["subconscious"].tps_p50 == 394 and eps["runinfra"].tps_p50 == 42
    assert eps["fireworks"].tps_p50 is None
    assert eps["lambda"].status_active is False  # status 1
    assert eps["chutes"].tools is False
    assert eps["nebius"].context_length == 32000
    assert eps["groq"].uptime_15m == 84.5


def test_openrouter_tag_is_the_slug_and_uptime_falls_back_to_30m() -> None:
    stats = parse_endpoints(
        "openrouter",
        load_json("openrouter_endpoints.json"),
        "deepseek/deepseek-v4.1-flash",
        authenticated=True,
    )
    assert stats.authenticated
    eps = by_slug(stats)
    assert list(eps) == ["deepinfra/fp8", "deepseek", "novita"]
    di = eps["deepinfra/fp8"]
    assert di.name == "DeepInfra"  # provider_name is the display name
    assert (di.tps_p50, di.ttft_p50_ms, di.uptime_15m) == (120.0, 500.0, 100.0)
    assert eps["deepseek"].uptime_15m == 99.9  # uptime_last_5m null → last 30m
    novita = eps["novita"]
    assert novita.status_active is False  # status -2
    assert novita.tools is False and novita.context_length == 65536


def test_openrouter_without_key_has_null_speed_figures() -> None:
    stats = parse_endpoints("openrouter", load_json("openrouter_endpoints_nokey.json"), "deepseek/x")
    assert not stats.authenticated
    for ep in stats.endpoints:
        assert ep.tps_p50 is None and ep.ttft_p50_ms is None
        assert ep.uptime_15m is not None  # uptime is public


def endpoint(**fields: Any) -> dict[str, Any]:
    return {"provider_name": "p", "status": 0, "supported_parameters": ["tools"], **fields}


@pytest.mark.parametrize(
    ("fields", "deprecated"),
    [
        ({}, False),
        ({"deprecated": True}, True),
        ({"deprecated_at": 1_000_000_000_000}, True),  # ms epoch in the past
        ({"deprecated_at": 1_000_000_000}, True),  # seconds, also in the past
        ({"deprecated_at": 4_000_000_000_000}, False),  # announced, not yet in force
    ],
)
def test_deprecation(fields: dict[str, Any], deprecated: bool) -> None:
    stats = parse_endpoints("vercel", {"data": {"endpoints": [endpoint(**fields)]}}, "a/b", now=2_000_000_000)
    assert stats.endpoints[0].deprecated is deprecated


def test_model_level_deprecated_at_marks_every_endpoint() -> None:
    payload = {
        "data": {"deprecated_at": 1_000_000_000_000, "endpoints": [endpoint(), endpoint(provider_name="q")]}
    }
    assert all(ep.deprecated for ep in parse_endpoints("vercel", payload, "a/b").endpoints)


@pytest.mark.parametrize(
    ("fields", "expect"),
    [
        ({"throughput_last_1h": {"p50": "81"}}, 81.0),  # numeric strings are read
        ({"throughput_last_1h": {"p50": True}}, None),
        ({"throughput_last_1h": {"p50": -3}}, None),
        ({"throughput_last_1h": {"p50": float("nan")}}, None),
        ({"throughput_last_1h": 81}, None),  # not the documented object
        ({"status": "0"}, None),
    ],
)
def test_defensive_numbers(fields: dict[str, Any], expect: float | None) -> None:
    ep = parse_endpoints("vercel", {"data": {"endpoints": [endpoint(**fields)]}}, "a/b").endpoints[0]
    assert ep.tps_p50 == expect
    if "status" in fields:
        assert ep.status_active is False


def test_duplicate_and_slugless_endpoints_are_skipped() -> None:
    payload = {"data": {"endpoints": [endpoint(), endpoint(provider_name="P"), {"status": 0}, "junk"]}}
    assert [ep.slug for ep in parse_endpoints("vercel", payload, "a/b").endpoints] == ["p"]


@pytest.mark.parametrize("payload", [{}, {"data": []}, {"data": {"endpoints": []}}, [], None])
def test_no_endpoints_is_unavailable(payload: Any) -> None:
    with pytest.raises(StatsUnavailable):
        parse_endpoints("vercel", payload, "a/b")


@pytest.mark.parametrize(
    ("kind", "base", "model", "url"),
    [
        ("vercel", "https://ai-gateway.vercel.sh", "deepseek/deepseek-v4.1-flash-1017",
         "https://ai-gateway.vercel.sh/v1/models/deepseek/deepseek-v4.1-flash-1017/endpoints"),
        ("vercel", "https://ai-gateway.vercel.sh/v1/", "zai/glm 5.1",
         "https://ai-gateway.vercel.sh/v1/models/zai/glm%205.1/endpoints"),
        ("vercel", "http://127.0.0.1:9/v1", "a/b?c#d", "http://127.0.0.1:9/v1/models/a/b%3Fc%23d/endpoints"),
        ("openrouter", "https://openrouter.ai", "deepseek/deepseek-v4.1-flash",
         "https://openrouter.ai/api/v1/models/deepseek/deepseek-v4.1-flash/endpoints"),
        ("openrouter", "https://openrouter.ai/api", "a/b", "https://openrouter.ai/api/v1/models/a/b/endpoints"),
        ("openrouter", "https://openrouter.ai/api/v1", "a/b:nitro", "https://openrouter.ai/api/v1/models/a/b/endpoints"),
        ("openrouter", "https://openrouter.ai/v1", "a/b:free", "https://openrouter.ai/api/v1/models/a/b%3Afree/endpoints"),
    ],
)  # fmt: skip
def test_stats_url(kind: str, base: str, model: str, url: str) -> None:
    assert stats_url(kind, base, model) == url


@pytest.mark.parametrize(("kind", "model"), [("vercel", "gpt-4o"), ("openai", "a/b")])
def test_stats_url_refuses_what_has_no_stats(kind: str, model: str) -> None:
    with pytest.raises(StatsUnavailable):
        stats_url(kind, "https://example.com", model)
