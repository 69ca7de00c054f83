"""inject_order: where the order goes per aggregator, and when the body must go out untouched."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from modelpool.aggregators import inject_order
from modelpool.aggregators.inject import client_routed

ORDER = ["subconscious", "cerebras", "deepseek"]
CHAT = {"model": "deepseek/deepseek-v4.1-flash-1017", "messages": [{"role": "user", "content": "hi"}]}
MESSAGES = {"model": "deepseek/deepseek-v4.1-flash-1017", "max_tokens": 64, "messages": CHAT["messages"]}
RESPONSES = {"model": "deepseek/deepseek-v4.1-flash-1017", "input": "hi", "reasoning": {"effort": "high"}}


@pytest.mark.parametrize("body", [CHAT, MESSAGES, RESPONSES], ids=["chat", "messages", "responses"])
def test_vercel_top_level_provider_options_for_every_ingress(body: dict[str, Any]) -> None:
    before = copy.deepcopy(body)
    out = inject_order(body, "vercel", ORDER)
    assert out is not None
    assert out["providerOptions"] == {"gateway": {"order": ORDER}}
    assert {k: v for k, v in out.items() if k != "providerOptions"} == body
    assert body == before  # the caller's dict is not mutated


def test_vercel_keeps_other_gateway_options() -> None:
    body = {**CHAT, "providerOptions": {"gateway": {"caching": "auto"}, "anthropic": {"x": 1}}}
    out = inject_order(body, "vercel", ORDER)
    assert out is not None
    assert out["providerOptions"] == {"gateway": {"caching": "auto", "order": ORDER}, "anthropic": {"x": 1}}
    assert body["providerOptions"]["gateway"] == {"caching": "auto"}


def test_openrouter_provider_order() -> None:
    body = {**CHAT, "provider": {"allow_fallbacks": True}}
    out = inject_order(body, "openrouter", ["deepinfra/fp8", "deepseek"])
    assert out is not None
    assert out["provider"] == {"allow_fallbacks": True, "order": ["deepinfra/fp8", "deepseek"]}
    assert "providerOptions" not in out
    assert body["provider"] == {"allow_fallbacks": True}


@pytest.mark.parametrize(
    ("kind", "body"),
    [
        ("vercel", {**CHAT, "providerOptions": {"gateway": {"order": ["baseten"]}}}),
        ("vercel", {**CHAT, "providerOptions": {"gateway": {"only": ["deepseek"]}}}),
        ("vercel", {**CHAT, "providerOptions": {"gateway": {"order": []}}}),  # explicit, even empty
        ("vercel", {**CHAT, "providerOptions": {"gateway": {"sort": "ttft"}}}),
        ("vercel", {**CHAT, "provider": {"sort": "tps"}}),  # Vercel's documented shorthand
        ("vercel", {**CHAT, "providerOptions": "garbage"}),
        ("vercel", {**CHAT, "providerOptions": {"gateway": ["garbage"]}}),
        ("openrouter", {**CHAT, "provider": {"order": ["novita"]}}),
        ("openrouter", {**CHAT, "provider": {"only": ["novita"]}}),
        ("openrouter", {**CHAT, "provider": {"sort": "throughput"}}),
        ("openrouter", {**CHAT, "model": "deepseek/deepseek-v4.1-flash:nitro"}),
        ("openrouter", {**CHAT, "provider": "garbage"}),
        ("openai", CHAT),  # not an aggregator
    ],
)
def test_client_routing_passes_through_untouched(kind: str, body: dict[str, Any]) -> None:
    raw = orjson.dumps(body)
    assert inject_order(body, kind, ORDER) is None  # None: send the client's bytes as they are
    assert orjson.dumps(body) == raw


def test_null_routing_keys_are_not_client_routing() -> None:
    body = {**CHAT, "providerOptions": {"gateway": {"order": None}}}
    assert not client_routed(body, "vercel")
    out = inject_order(body, "vercel", ORDER)
    assert out is not None and out["providerOptions"]["gateway"]["order"] == ORDER


@pytest.mark.parametrize("order", [[], ["", None]])
def test_empty_order_is_none(order: list[Any]) -> None:
    assert inject_order(CHAT, "vercel", order) is None


def test_order_is_deduplicated() -> None:
    out = inject_order(CHAT, "vercel", ["a", "b", "a"])
    assert out is not None and out["providerOptions"]["gateway"]["order"] == ["a", "b"]


def test_non_object_body() -> None:
    assert inject_order([1, 2], "vercel", ORDER) is None
