"""Prompt caching across dialects (SPEC §3.11), through the real gateway: an OpenAI or Responses client on a
Messages route gets the breakpoints an Anthropic client would place, its cached tokens back in its own usage
fields and at the cached price in its cost; a native Anthropic call is sent as it came."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider

PRICES = {"input": 3.0, "cached_input": 0.3, "cache_write": 3.75, "output": 15.0}
SYSTEM = "You are a careful coding agent. " * 60
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "description": "Write a file. " * 20,
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]


@pytest.fixture(scope="module")
def ft() -> Iterator[FleetThread]:
    anth = SimProvider(
        "anth",
        kind="anthropic",
        models=[SimModel("m1", output_tokens=5)],
        ttft=0.002,
        tps=5000,
        prompt_cache=True,
    )
    with FleetThread(FleetSpec([anth])) as fleet:
        yield fleet


def config(ft: FleetThread, **pool: Any) -> dict[str, Any]:
    cfg = ft.to_config(state={"backend": "memory"}, server={"admin_token": ADMIN_TOKEN})
    cfg["providers"][0]["prices"] = PRICES
    cfg["pool"] = {"strategy": "priority", "retry_backoff": "1ms", **pool}
    cfg["holidays"] = {"source": "bundled"}
    return cfg


def turns(n: int) -> list[list[dict[str, Any]]]:
    """The message lists of an n-turn agent conversation, each turn growing the last."""
    history: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    out = []
    for i in range(n):
        history = [*history, {"role": "user", "content": f"Step {i}: " + "do the next thing. " * 30}]
        out.append(history)
        history = [*history, {"role": "assistant", "content": f"Done with step {i}."}]
    return out


def chat_session(gw: GatewayServer, n: int) -> list[tuple[Any, float]]:
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
    replies = []
    for messages in turns(n):
        raw = client.chat.completions.with_raw_response.create(model="m1", messages=messages, tools=TOOLS)
        replies.append((raw.parse().usage, float(raw.headers["x-modelpool-cost"])))
    return replies


def test_an_openai_client_on_a_messages_route_gets_breakpoints_and_cached_tokens(ft: FleetThread) -> None:
    ft.reset_calls()
    with GatewayServer(config(ft)) as gw:
        replies = chat_session(gw, 3)
    sent = ft.calls("anth")[-1].body
    assert sent["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert sent["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert sent["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    first, second = replies[0][0], replies[1][0]
    assert first.prompt_tokens_details.cached_tokens == 0 and first.cache_creation_input_tokens > 0
    cached = second.prompt_tokens_details.cached_tokens
    assert cached > 0 and cached < second.prompt_tokens  # the client's own usage field
    fresh = second.prompt_tokens - cached - (second.model_extra or {}).get("cache_creation_input_tokens", 0)
    written = (second.model_extra or {}).get("cache_creation_input_tokens", 0)
    want = (
        fresh * PRICES["input"]
        + cached * PRICES["cached_input"]
        + written * PRICES["cache_write"]
        + second.completion_tokens * PRICES["output"]
    ) / 1e6
    assert replies[1][1] == pytest.approx(want, rel=1e-6)  # the cached price in the cost

    with GatewayServer(config(ft, prompt_cache="off")) as gw:
        ft.reset_calls()
        off = chat_session(gw, 3)
    assert "cache_control" not in str(ft.calls("anth")[-1].body)
    assert all(u.prompt_tokens_details.cached_tokens == 0 for u, _ in off)
    assert sum(c for _, c in replies) < sum(c for _, c in off)


def test_a_responses_client_gets_its_cached_tokens_in_input_tokens_details(ft: FleetThread) -> None:
    with GatewayServer(config(ft)) as gw:
        client = openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
        usage = []
        for messages in turns(2):
            r = client.responses.create(model="m1", instructions=SYSTEM, input=messages[1:])
            usage.append(r.usage)
    assert usage[1] is not None and usage[1].input_tokens_details.cached_tokens > 0


def test_a_native_anthropic_call_is_sent_as_it_came(ft: FleetThread) -> None:
    ft.reset_calls()
    with GatewayServer(config(ft)) as gw:
        client = anthropic.Anthropic(base_url=gw.url, api_key="k", max_retries=0)
        body = {
            "model": "m1",
            "max_tokens": 64,
            "system": SYSTEM,
            "messages": [{"role": "user", "content": "hi"}],
        }
        client.messages.create(**body)  # type: ignore[call-overload]
    assert ft.calls("anth")[-1].body == body  # no breakpoint added: the client decides its own
