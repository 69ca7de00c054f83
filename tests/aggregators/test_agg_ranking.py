"""The fastest-first ranking: bands, every demotion rule with its reason, first-party marks."""

from __future__ import annotations

from typing import Any

import pytest

from modelpool.aggregators import EndpointStats, is_first_party, parse_endpoints, rank

MODEL_22 = "deepseek/deepseek-v4.1-flash-1017"


def ranked(payload: Any, model: str, **kw: Any) -> Any:
    return rank(parse_endpoints("vercel", payload, model).endpoints, model=model, **kw)


def test_fixture_a_order(fixture_a: Any) -> None:
    r = ranked(fixture_a, "deepseek/deepseek-v3.2-thinking", has_tools=True, min_uptime=90)
    # bedrock 42 tok/s, novita 29 tok/s, then fireworks (all-null stats) after those with data.
    assert r.order == ["bedrock", "novita", "fireworks"]
    assert [e.demoted for e in r.entries] == [(), (), ()]
    assert r.entries[2].reason.startswith("no recent throughput data")
    assert r.best_tps == 42.0 and r.best_ttft_ms == 5242.0


def test_fixture_a_context_demotion(fixture_a: Any) -> None:
    r = ranked(fixture_a, "deepseek/deepseek-v3.2-thinking", est_tokens=150_000)
    assert r.order == ["novita", "fireworks", "bedrock"]  # bedrock: 128k < 150k
    assert r.entries[-1].demoted == ("context 128,000 < ~150,000 tokens in the conversation",)
    assert r.best_tps == 29.0


EXPECTED_22_WITH_TOOLS = [
    "subconscious", "cerebras", "sambanova", "togetherai", "deepseek", "baseten", "deepinfra", "novita",
    "parasail", "bedrock", "vertex", "azure", "hyperbolic", "crusoe", "inference-net", "friendli", "runinfra",
    "fireworks",  # null stats: after every measured provider, before the demoted
    # demoted, in the order they would otherwise have had:
    "groq",  # 318 tok/s, uptime 84.5 < 90
    "nebius",  # 88 tok/s, context 32k < 64k
    "lambda",  # 79 tok/s, status 1
    "chutes",  # 51 tok/s, no tools and the call has tools
]  # fmt: skip


def test_22_providers_every_demotion_rule(vercel_22: Any) -> None:
    r = ranked(vercel_22, MODEL_22, has_tools=True, est_tokens=64_000, min_uptime=90)
    assert r.order == EXPECTED_22_WITH_TOOLS
    why = {e.slug: e.demoted for e in r.entries if e.demoted}
    assert why == {
        "groq": ("uptime 84.5% < 90% over 15 min",),
        "nebius": ("context 32,000 < ~64,000 tokens in the conversation",),
        "lambda": ("status not active",),
        "chutes": ("no tool support (the call has tools)",),
    }
    assert r.best_tps == 394.0
    assert [e.slug for e in r.entries if e.first_party] == ["deepseek"]


def test_22_providers_plain_call_only_status_and_uptime_demote(vercel_22: Any) -> None:
    r = ranked(vercel_22, MODEL_22, min_uptime=90)
    assert r.order[:3] == ["subconscious", "cerebras", "sambanova"]
    # No tools, small conversation: chutes and nebius keep their speed positions.
    assert r.order.index("nebius") < r.order.index("chutes") < r.order.index("fireworks")
    assert r.order[-2:] == ["groq", "lambda"]


def test_min_uptime_is_a_knob(vercel_22: Any) -> None:
    assert ranked(vercel_22, MODEL_22, min_uptime=80).order[2] == "groq"
    strict = ranked(vercel_22, MODEL_22, min_uptime=99.9)
    assert strict.order[:3] == ["subconscious", "cerebras", "togetherai"]  # 100, 100, 99.9 (not below)
    assert "sambanova" in {e.slug for e in strict.entries if e.demoted}  # 99.6


def test_table_rows(vercel_22: Any) -> None:
    rows = ranked(vercel_22, MODEL_22, has_tools=True, est_tokens=64_000).table
    first = rows[0]
    assert first == {
        "provider": "subconscious",
        "name": "subconscious",
        "tps": 394.0,
        "ttft_ms": 310.0,
        "uptime_15m": 100.0,
        "first_party": False,
        "demoted": [],
        "notes": "",
        "reason": "median 394 tok/s",
    }
    notes = {r["provider"]: r["notes"] for r in rows}
    assert notes["deepseek"] == "first-party"
    assert notes["fireworks"] == "no recent data"
    assert notes["lambda"] == "demoted: status not active"


def ep(slug: str, tps: float | None, **kw: Any) -> EndpointStats:
    base: dict[str, Any] = dict(
        ttft_p50_ms=None,
        uptime_15m=100.0,
        status_active=True,
        deprecated=False,
        tools=True,
        context_length=None,
    )
    return EndpointStats(slug=slug, name=slug, tps_p50=tps, **{**base, **kw})


def test_ties_and_nulls_keep_listing_order() -> None:
    stats = [ep("n1", None), ep("a", 100), ep("b", 100), ep("n2", None), ep("c", 200)]
    assert rank(stats).order == ["c", "a", "b", "n1", "n2"]


def test_several_reasons_and_deprecated() -> None:
    stats = [ep("old", 500, deprecated=True, status_active=False), ep("ok", 10)]
    r = rank(stats)
    assert r.order == ["ok", "old"]
    assert r.entries[1].demoted == ("status not active", "deprecated")
    assert r.entries[1].reason == "moved to the back: status not active; deprecated"


def test_null_uptime_is_not_a_demotion() -> None:
    assert rank([ep("a", None, uptime_15m=None), ep("b", 5)], min_uptime=90).order == ["b", "a"]


def test_all_demoted_best_tps_is_the_head() -> None:
    r = rank([ep("a", 50, tools=False), ep("b", 80, tools=False)], has_tools=True)
    assert r.order == ["b", "a"] and r.best_tps == 80.0


def test_empty() -> None:
    r = rank([])
    assert r.order == [] and r.best_tps is None and r.table == []


@pytest.mark.parametrize(
    ("model", "slug", "first"),
    [
        ("deepseek/deepseek-v4.1-flash-1017", "deepseek", True),
        ("deepseek/deepseek-v4.1-flash-1017", "DeepSeek", True),
        ("deepseek/deepseek-v4.1-flash-1017", "deepinfra", False),
        ("zai/glm-5.1", "z-ai", True),
        ("z-ai/glm-5.1", "zai", True),
        ("zai/glm-5.1", "zhipu", True),
        ("x-ai/grok-4", "xai", True),
        ("qwen/qwen3-235b", "alibaba", True),
        ("meta-llama/llama-4", "meta", True),
        ("mistralai/mistral-large", "mistral", True),
        ("moonshotai/kimi-k2", "moonshot", True),
        ("deepseek/deepseek-v4.1-flash", "deepseek/fp8", True),  # OpenRouter tag with a variant
        ("anthropic/claude-haiku-4.5", "vertexAnthropic", False),
        ("gpt-4o", "openai", False),  # no creator segment
    ],
)
def test_first_party(model: str, slug: str, first: bool) -> None:
    assert is_first_party(model, slug) is first
