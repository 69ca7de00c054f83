"""Effort mapping (SPEC §3.1 step 9): read in any dialect, map to the route's tiers, write back."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelpool.protocols.effort import (
    TIER_BUDGET,
    TIERS,
    budget_tier,
    nearest_effort,
    read_effort,
    union_efforts,
    write_effort,
)


@pytest.mark.parametrize(
    ("requested", "supported", "expected"),
    [
        ("max", ["off", "high"], "high"),
        ("minimal", ["low", "high"], "low"),
        ("medium", ["low", "high"], "high"),  # equal distance: the higher tier
        ("high", ["low", "high", "max"], "high"),  # exact first
        ("xhigh", ["low", "high", "max"], "max"),  # tie between high and max → max
        ("off", ["low", "high"], "low"),
        ("off", ["off", "high"], "off"),
        ("low", ["off", "max"], "off"),
        ("medium", None, "medium"),  # unknown support: pass through
        ("high", [], None),  # no effort control: say nothing
        (None, ["low"], None),
    ],
)
def test_nearest_effort_table(
    requested: str | None, supported: list[str] | None, expected: str | None
) -> None:
    assert nearest_effort(requested, supported) == expected


@given(st.sampled_from(TIERS), st.lists(st.sampled_from(TIERS), min_size=1, unique=True))
def test_nearest_is_supported_and_closest(requested: str, supported: list[str]) -> None:
    got = nearest_effort(requested, supported)
    assert got in supported
    rank = TIERS.index
    best = min(abs(rank(s) - rank(requested)) for s in supported)
    assert abs(rank(got) - rank(requested)) == best
    ties = [s for s in supported if abs(rank(s) - rank(requested)) == best]
    assert rank(got) == max(rank(s) for s in ties)


def test_union_is_ordered_by_tier() -> None:
    assert union_efforts([["max", "low"], None, ["off", "high"]]) == ("off", "low", "high", "max")
    assert union_efforts([None, None]) is None


@pytest.mark.parametrize(
    ("dialect", "body", "expected"),
    [
        ("openai", {"reasoning_effort": "high"}, "high"),
        ("openai", {"reasoning_effort": "HIGH"}, "high"),
        ("openai", {"thinking": {"type": "disabled"}, "reasoning_effort": "high"}, "off"),
        ("openai", {"thinking": {"type": "enabled"}}, "high"),  # DeepSeek default depth
        ("openai", {}, None),
        ("anthropic", {"thinking": {"type": "enabled", "budget_tokens": 1024}}, "minimal"),
        ("anthropic", {"thinking": {"type": "enabled", "budget_tokens": 4000}}, "medium"),
        ("anthropic", {"thinking": {"type": "enabled", "budget_tokens": 10000}}, "high"),
        ("anthropic", {"thinking": {"type": "enabled", "budget_tokens": 31999}}, "max"),
        ("anthropic", {"thinking": {"type": "adaptive"}, "output_config": {"effort": "xhigh"}}, "xhigh"),
        ("anthropic", {"thinking": {"type": "adaptive"}}, None),
        ("anthropic", {"thinking": {"type": "disabled"}}, "off"),
        ("responses", {"reasoning": {"effort": "none"}}, "off"),
        ("responses", {"reasoning": {"effort": "minimal"}}, "minimal"),
        ("responses", {"reasoning": {"summary": "auto"}}, None),
    ],
)
def test_read_effort(dialect: str, body: dict, expected: str | None) -> None:
    assert read_effort(dialect, body) == expected


def test_budget_bands_round_trip() -> None:
    for tier, budget in TIER_BUDGET.items():
        assert budget_tier(budget) == tier
    assert budget_tier(0) == "off" and budget_tier(10**6) == "max"


def test_write_openai() -> None:
    body = {"model": "m", "reasoning_effort": "low", "thinking": {"type": "disabled"}}
    assert write_effort("openai", body, "high") == {"model": "m", "reasoning_effort": "high"}
    assert write_effort("openai", body, "off") == {"model": "m", "thinking": {"type": "disabled"}}
    assert write_effort("openai", body, None) == {"model": "m"}
    assert body["reasoning_effort"] == "low"  # the input is not modified


def test_write_anthropic() -> None:
    body = {"model": "m", "max_tokens": 64000, "temperature": 0.2, "messages": []}
    out = write_effort("anthropic", body, "high")
    assert out["thinking"] == {"type": "enabled", "budget_tokens": TIER_BUDGET["high"]}
    assert "temperature" not in out and "output_config" not in out and out["max_tokens"] == 64000
    out = write_effort("anthropic", body, "xhigh", ["low", "high", "xhigh"])
    assert out["output_config"] == {"effort": "xhigh"}
    off = write_effort("anthropic", out, "off", ["low", "high"])
    assert off["thinking"] == {"type": "disabled"} and "output_config" not in off
    # budget_tokens must stay below max_tokens: the answer room is kept on top of the budget
    small = write_effort("anthropic", {"max_tokens": 1000, "messages": []}, "medium")
    assert small["thinking"]["budget_tokens"] < small["max_tokens"] == 1000 + TIER_BUDGET["medium"]


def test_write_anthropic_keeps_thinking_off_for_unsigned_tool_turn() -> None:
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]},
    ]
    out = write_effort("anthropic", {"max_tokens": 100, "messages": messages}, "high")
    assert "thinking" not in out
    signed = [{"type": "thinking", "thinking": "x", "signature": "s"}, *messages[1]["content"]]
    messages[1] = {"role": "assistant", "content": signed}
    assert (
        write_effort("anthropic", {"max_tokens": 100, "messages": messages}, "high")["thinking"]["type"]
        == "enabled"
    )


def test_write_responses() -> None:
    assert write_effort("responses", {"reasoning": {"summary": "auto"}}, "off") == {
        "reasoning": {"summary": "auto", "effort": "none"}
    }


@given(st.sampled_from(TIERS[1:]))
def test_anthropic_write_then_read_is_identity(tier: str) -> None:
    body = write_effort("anthropic", {"max_tokens": 100000, "messages": []}, tier)
    assert read_effort("anthropic", body) == tier
