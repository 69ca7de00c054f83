"""The Vercel-like aggregator: inner choice (order / only / default), routing records, endpoint stats."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx
import orjson
import pytest
from openai import OpenAI

from modelpool.sim import Fault, FleetSpec, FleetThread, InnerProvider, SimModel, SimProvider, expected_text

MODEL = "deepseek/deepseek-v4.1-flash-1017"
USER = [{"role": "user", "content": "hello"}]
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]


def gateway(options: dict[str, Any] | None) -> dict[str, Any]:
    return {} if options is None else {"providerOptions": {"gateway": options}}


def chat(fleet: FleetThread, options: dict[str, Any] | None = None, **kwargs: Any) -> Any:
    c = OpenAI(base_url=fleet.base_url("vercel"), api_key="x", max_retries=0, timeout=10)
    kwargs.setdefault("messages", USER)
    return c.chat.completions.create(model=MODEL, extra_body=gateway(options), **kwargs)


def served_by(fleet: FleetThread) -> str | None:
    return fleet.calls("vercel")[-1].inner


def routing_of(response: Any) -> dict[str, Any]:
    return response.choices[0].message.model_extra["provider_metadata"]["gateway"]["routing"]


@pytest.mark.parametrize(
    ("options", "inner"),
    [
        ({"order": ["runinfra", "subconscious"]}, "runinfra"),
        ({"order": ["down", "nobody", "deepseek"]}, "deepseek"),  # inactive and unknown are skipped
        ({"only": ["fireworks"]}, "fireworks"),
        ({"only": ["deepseek", "subconscious"], "order": ["subconscious"]}, "subconscious"),
        ({"only": ["deepseek", "subconscious"], "order": ["runinfra"]}, "deepseek"),  # order ∩ only
        (None, "baseten"),  # the gateway's own default
        ({"order": ["SubConscious"]}, "subconscious"),  # slugs compare case-insensitively
    ],
)
def test_inner_choice(fleet: FleetThread, options: dict[str, Any] | None, inner: str) -> None:
    r = chat(fleet, options)
    assert served_by(fleet) == inner
    assert r.choices[0].message.content == expected_text("vercel", MODEL, 5)
    routing = routing_of(r)
    assert routing["finalProvider"] == routing["resolvedProvider"] == inner


def test_tools_and_context_skip_unfit_inner_providers(fleet: FleetThread) -> None:
    chat(fleet, {"order": ["notools", "deepseek"]}, tools=TOOLS)
    assert served_by(fleet) == "deepseek"
    chat(fleet, {"order": ["notools"]})
    assert served_by(fleet) == "notools"
    chat(fleet, {"order": ["tiny", "deepseek"]}, messages=[{"role": "user", "content": "y" * 200}])
    assert served_by(fleet) == "deepseek"


def test_only_with_nothing_eligible_is_an_error(fleet: FleetThread) -> None:
    r = httpx.post(
        fleet.base_url("vercel") + "/chat/completions",
        json={"model": MODEL, "messages": USER, **gateway({"only": ["down"]})},
    )
    assert r.status_code == 400 and "Allowed providers: down" in r.json()["error"]["message"]


def test_default_is_the_middle_choice_without_default_inner() -> None:
    inner = [InnerProvider(n, tps=100) for n in ("a", "b", "c", "d", "e")]
    spec = FleetSpec([SimProvider("gw", kind="vercel", models=[SimModel("x/y")], inner=inner)], fast=True)
    with FleetThread(spec) as ft:
        OpenAI(base_url=ft.base_url("gw"), api_key="k", max_retries=0).chat.completions.create(
            model="x/y", messages=USER
        )
        assert ft.calls("gw")[0].inner == "c"


def test_routing_record_on_the_final_stream_chunk(fleet: FleetThread) -> None:
    chunks = list(chat(fleet, {"order": ["subconscious", "deepseek"]}, stream=True))
    assert chunks[0].choices[0].delta.role == "assistant"
    final = chunks[-1]
    assert final.choices[0].finish_reason == "stop"
    meta = final.choices[0].delta.model_extra["provider_metadata"]["gateway"]
    routing = meta["routing"]
    assert routing["finalProvider"] == "subconscious" and routing["resolvedProvider"] == "subconscious"
    assert routing["originalModelId"] == MODEL
    assert routing["modelAttemptCount"] == 1 and routing["totalProviderAttemptCount"] == 1
    assert routing["fallbacksAvailable"][0] == "deepseek"
    assert routing["planningReasoning"].startswith("System credentials planned for: subconscious, deepseek")
    attempt = routing["modelAttempts"][0]["providerAttempts"][0]
    assert (
        attempt["provider"] == "subconscious" and attempt["statusCode"] == 200 and attempt["success"] is True
    )
    assert final.usage is not None and final.usage.completion_tokens == 5  # Vercel: usage on the final chunk
    assert meta["generationId"].startswith("gen_")
    assert all(not c.choices[0].delta.model_extra.get("provider_metadata") for c in chunks[:-1])


def test_only_reads_restricted_in_planning(fleet: FleetThread) -> None:
    routing = routing_of(chat(fleet, {"only": ["deepseek"]}))
    assert routing["planningReasoning"] == "Provider set restricted to: deepseek."


def test_vercel_reasoning_field_is_reasoning(fleet: FleetThread) -> None:
    chunks = list(chat(fleet, None, stream=True, reasoning_effort="high"))
    fields = {k for c in chunks for k in (c.choices[0].delta.model_extra or {})}
    assert "reasoning" in fields and "reasoning_content" not in fields


def test_inner_fault_falls_back_like_vercel(fleet: FleetThread) -> None:
    fleet.set_faults("vercel", [Fault("rate_limit", inner="subconscious")])
    r = chat(fleet, {"order": ["subconscious", "deepseek"]})
    routing = routing_of(r)
    assert routing["resolvedProvider"] == "subconscious" and routing["finalProvider"] == "deepseek"
    assert routing["totalProviderAttemptCount"] == 2
    codes = [a["statusCode"] for a in routing["modelAttempts"][0]["providerAttempts"]]
    assert codes == [429, 200]
    record = fleet.calls("vercel")[-1]
    assert record.inner == "deepseek" and record.inner_attempts == ["subconscious", "deepseek"]


def test_all_inner_providers_failing_is_an_error(fleet: FleetThread) -> None:
    fleet.set_faults("vercel", [Fault("server_error", inner="fireworks")])
    r = httpx.post(
        fleet.base_url("vercel") + "/chat/completions",
        json={"model": MODEL, "messages": USER, **gateway({"only": ["fireworks"]})},
    )
    assert r.status_code == 500 and fleet.calls("vercel")[-1].outcome == "server_error"


def test_anthropic_messages_carry_routing_on_message_delta(fleet: FleetThread) -> None:
    body = {
        "model": MODEL,
        "max_tokens": 50,
        "messages": USER,
        "stream": True,
        **gateway({"order": ["deepseek"]}),
    }
    raw = httpx.post(fleet.root_url("vercel") + "/v1/messages", json=body).text
    frames = [f.split("\n", 1) for f in raw.strip().split("\n\n")]
    events = {
        name.removeprefix("event: "): orjson.loads(data.removeprefix("data: ")) for name, data in frames
    }
    assert events["message_start"]["message"]["id"].startswith("gen_")
    routing = events["message_delta"]["provider_metadata"]["gateway"]["routing"]
    assert routing["finalProvider"] == "deepseek"
    msg = anthropic.Anthropic(base_url=fleet.root_url("vercel"), api_key="x", max_retries=0).messages.create(
        model=MODEL, max_tokens=50, messages=USER, extra_body=gateway({"order": ["runinfra"]})
    )
    assert msg.content[0].text == expected_text("vercel", MODEL, 5)
    assert msg.model_extra["provider_metadata"]["gateway"]["routing"]["finalProvider"] == "runinfra"


def test_endpoint_stats_shape(fleet: FleetThread) -> None:
    r = httpx.get(f"{fleet.base_url('vercel')}/models/{MODEL}/endpoints")
    assert r.status_code == 200
    data = r.json()["data"]
    assert data["id"] == MODEL
    eps = {e["provider_name"]: e for e in data["endpoints"]}
    assert len(eps) == 8
    sub = eps["subconscious"]
    assert sub["name"] == f"subconscious | {MODEL}"
    assert sub["throughput_last_1h"]["p50"] == 394 and sub["throughput_last_1h"]["p95"] >= 394
    assert sub["latency_last_1h"]["p50"] == 3
    assert sub["status"] == 0 and sub["uptime_last_15m"] == 100
    assert "tools" in sub["supported_parameters"] and "tools" not in eps["notools"]["supported_parameters"]
    assert isinstance(sub["pricing"]["prompt"], str) and float(sub["pricing"]["prompt"]) > 0
    nulls = eps["fireworks"]
    for key in (
        "uptime_last_15m",
        "uptime_last_1h",
        "uptime_last_1d",
        "latency_last_1h",
        "throughput_last_1h",
    ):
        assert nulls[key] is None
    assert eps["down"]["status"] == 1 and eps["runinfra"]["uptime_last_15m"] == 88
    assert eps["tiny"]["context_length"] == 10
    missing = httpx.get(f"{fleet.base_url('vercel')}/models/nobody/nothing/endpoints")
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "model_not_found"


def test_catalog_is_vercel_shaped(fleet: FleetThread) -> None:
    data = httpx.get(fleet.base_url("vercel") + "/models").json()["data"]
    assert data[0]["id"] == MODEL and data[0]["type"] == "language" and data[0]["owned_by"] == "deepseek"
    assert isinstance(data[0]["pricing"]["input"], str)


def test_session_affinity_keeps_the_last_provider() -> None:
    inner = [InnerProvider(n, tps=100) for n in ("a", "b", "c")]
    spec = FleetSpec(
        [
            SimProvider(
                "gw", kind="vercel", models=[SimModel("x/y")], inner=inner, affinity_ttl=60, default_inner="b"
            )
        ],
        fast=True,
    )
    with FleetThread(spec) as ft:
        c = OpenAI(base_url=ft.base_url("gw"), api_key="k", max_retries=0)

        def call(order: list[str], session: str) -> dict[str, Any]:
            r = c.chat.completions.create(
                model="x/y",
                messages=USER,
                extra_body=gateway({"order": order}),
                extra_headers={"x-session-id": session},
            )
            return routing_of(r)

        first = call(["a"], "s1")
        assert first["finalProvider"] == "a" and first["affinity"]["outcome"] == "new"
        again = call(["c"], "s1")  # the pin wins over a new order, as on Vercel
        assert again["finalProvider"] == "a" and again["affinity"] == {
            "outcome": "confirmed",
            "pinnedProvider": "a",
        }
        assert call(["c"], "s2")["finalProvider"] == "c"  # another session starts fresh
        ft.set_faults("gw", [Fault("server_error", inner="a", times=1)])
        fell = call(["a", "b"], "s1")
        assert fell["finalProvider"] == "b" and fell["affinity"]["outcome"] == "fallback"
        assert call(["c"], "s1")["finalProvider"] == "b"  # re-pinned to the provider that served
