"""Any ingress on any route kind, through the real server with the official SDKs (issue: protocols)."""

from __future__ import annotations

import anthropic
import openai
import pytest

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import (
    Fault,
    FleetSpec,
    FleetThread,
    SimModel,
    SimProvider,
    expected_reasoning,
    expected_text,
    expected_tool_arguments,
)

TOOLS_OPENAI = [
    {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}
]
TOOLS_ANTHROPIC = [{"name": "lookup", "input_schema": {"type": "object", "properties": {}}}]


def spec() -> FleetSpec:
    fast = {"ttft": 0.005, "tps": 5000.0}
    return FleetSpec(
        [
            SimProvider("oa", models=[SimModel("m1", output_tokens=5, reasoning_tokens=3)], **fast),
            SimProvider(
                "an", kind="anthropic", models=[SimModel("m1", output_tokens=5, reasoning_tokens=3)], **fast
            ),
        ]
    )


@pytest.fixture(scope="module")
def ft() -> FleetThread:
    with FleetThread(spec()) as fleet:
        yield fleet


def config(ft: FleetThread, order: list[str], **pool: object) -> dict:
    cfg = ft.to_config(state={"backend": "memory"}, server={"admin_token": ADMIN_TOKEN})
    cfg["pool"] = {
        "strategy": "priority",
        "provider_order": order,
        "retry_backoff": "1ms",
        "sticky": False,
        **pool,
    }
    return cfg


def anthropic_client(gw: GatewayServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gw.url, api_key="x", max_retries=0)


def openai_client(gw: GatewayServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0)


def test_anthropic_sdk_on_an_openai_route_streams_text_thinking_and_usage(ft: FleetThread) -> None:
    with GatewayServer(config(ft, ["oa"])) as gw:
        with anthropic_client(gw).messages.stream(
            model="m1", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            text = "".join(stream.text_stream)
            final = stream.get_final_message()
        assert text == expected_text("oa", "m1", 5)
        thinking = [b for b in final.content if b.type == "thinking"]
        assert thinking and thinking[0].thinking == expected_reasoning("oa", "m1", 3)
        assert final.usage.output_tokens > 0 and final.stop_reason == "end_turn"
        assert final.model_extra.get("modelpool") is None  # the metadata rides on message_delta, not here
        assert ft.calls("oa")[-1].body["model"] == "m1"


def test_anthropic_sdk_tool_use_with_arguments_assembled(ft: FleetThread) -> None:
    with GatewayServer(config(ft, ["oa"])) as gw:
        with anthropic_client(gw).messages.stream(
            model="m1",
            max_tokens=64,
            tools=TOOLS_ANTHROPIC,
            messages=[{"role": "user", "content": "look it up"}],
        ) as stream:
            final = stream.get_final_message()
        (tool,) = [b for b in final.content if b.type == "tool_use"]
        assert tool.name == "lookup"
        import json

        assert tool.input == json.loads(expected_tool_arguments("oa", "m1"))
        assert final.stop_reason == "tool_use"


def test_openai_sdk_on_an_anthropic_route(ft: FleetThread) -> None:
    with GatewayServer(config(ft, ["an"])) as gw:
        c = openai_client(gw)
        raw = c.chat.completions.with_raw_response.create(
            model="m1", messages=[{"role": "user", "content": "hi"}]
        )
        assert raw.headers["x-modelpool-route"] == "an/m1"
        reply = raw.parse()
        assert reply.choices[0].message.content == expected_text("an", "m1", 5)
        chunks = list(
            c.chat.completions.create(
                model="m1",
                messages=[{"role": "user", "content": "hi"}],
                stream=True,
                stream_options={"include_usage": True},
            )
        )
        text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
        assert text == expected_text("an", "m1", 5)
        assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0
        assert ft.calls("an")[-1].path.endswith("/v1/messages")


@pytest.mark.parametrize("route", ["oa", "an"])
def test_responses_api_on_both_route_kinds(ft: FleetThread, route: str) -> None:
    with GatewayServer(config(ft, [route])) as gw:
        c = openai_client(gw)
        resp = c.responses.create(model="m1", input="hi")
        assert resp.output_text == expected_text(route, "m1", 5)
        events = list(c.responses.create(model="m1", input="hi", stream=True))
        deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
        assert deltas == expected_text(route, "m1", 5)
        completed = [e for e in events if e.type == "response.completed"]
        assert completed and completed[0].response.usage.output_tokens > 0


def test_failover_from_an_anthropic_route_to_an_openai_route_is_one_coherent_stream(ft: FleetThread) -> None:
    # The Anthropic route dies after its thinking (before any answer text): the walk switches dialects.
    ft.set_faults("an", [Fault("cut", times=5)])
    try:
        with GatewayServer(config(ft, ["an", "oa"], retries_per_route=0)) as gw:
            events = []
            with anthropic_client(gw).messages.stream(
                model="m1", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
            ) as stream:
                for ev in stream:
                    events.append(ev)
                final = stream.get_final_message()
            text = "".join(b.text for b in final.content if b.type == "text")
            assert text == expected_text("oa", "m1", 5)  # one answer, no spliced or repeated text
            assert [e.type for e in events].count("message_start") == 1
            starts = [e.index for e in events if e.type == "content_block_start"]
            assert starts == sorted(set(starts))  # block indices keep increasing across attempts
    finally:
        ft.set_faults("an", [])


def test_an_image_call_reaches_only_the_image_capable_route() -> None:
    fast = {"ttft": 0.005, "tps": 5000.0}
    spec = FleetSpec(
        [
            SimProvider("textonly", models=[SimModel("m1", output_tokens=3)], **fast),
            SimProvider(
                "eyes", kind="anthropic", models=[SimModel("m1", output_tokens=3, images=True)], **fast
            ),
        ]
    )
    image = "data:image/png;base64,iVBORw0KGgo="
    with FleetThread(spec) as fleet, GatewayServer(config(fleet, ["textonly"])) as gw:
        c = openai_client(gw)
        content = [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": image}},
        ]
        raw = c.chat.completions.with_raw_response.create(
            model="m1", messages=[{"role": "user", "content": content}]
        )
        assert raw.headers["x-modelpool-route"] == "eyes/m1"
        sent = fleet.calls("eyes")[-1].body["messages"][0]["content"]
        assert any(b["type"] == "image" and b["source"]["data"] == "iVBORw0KGgo=" for b in sent)
        text_call = c.chat.completions.with_raw_response.create(
            model="m1", messages=[{"role": "user", "content": "hi"}]
        )
        assert text_call.headers["x-modelpool-route"] == "textonly/m1"  # text calls keep every route


def test_max_effort_arrives_as_high_on_a_route_that_offers_off_and_high() -> None:
    fast = {"ttft": 0.005, "tps": 5000.0}
    spec = FleetSpec(
        [SimProvider("ds", models=[SimModel("m1", output_tokens=3, efforts=["off", "high"])], **fast)]
    )
    with FleetThread(spec) as fleet, GatewayServer(config(fleet, ["ds"])) as gw:
        raw = openai_client(gw).chat.completions.with_raw_response.create(
            model="m1", messages=[{"role": "user", "content": "hi"}], reasoning_effort="max"
        )
        assert raw.headers["x-modelpool-effort"] == "high"
        assert fleet.calls("ds")[-1].body["reasoning_effort"] == "high"
        with anthropic_client(gw).messages.stream(
            model="m1",
            max_tokens=64,
            thinking={"type": "enabled", "budget_tokens": 2048},
            messages=[{"role": "user", "content": "hi"}],
        ) as stream:
            stream.get_final_message()
        assert fleet.calls("ds")[-1].body["reasoning_effort"] == "high"  # medium → nearest, ties to higher


def test_a_call_with_tools_demotes_a_route_declared_without_tools() -> None:
    fast = {"ttft": 0.005, "tps": 5000.0}
    spec = FleetSpec(
        [
            SimProvider("notools", models=[SimModel("m1", output_tokens=3, tools=False)], **fast),
            SimProvider("tools", models=[SimModel("m1", output_tokens=3)], **fast),
        ]
    )
    with FleetThread(spec) as fleet, GatewayServer(config(fleet, ["notools"])) as gw:
        c = openai_client(gw)
        raw = c.chat.completions.with_raw_response.create(
            model="m1", messages=[{"role": "user", "content": "hi"}], tools=TOOLS_OPENAI
        )
        assert raw.headers["x-modelpool-route"] == "tools/m1"
        plain = c.chat.completions.with_raw_response.create(
            model="m1", messages=[{"role": "user", "content": "hi"}]
        )
        assert plain.headers["x-modelpool-route"] == "notools/m1"
        why = gw.gateway.last_plans[next(iter(gw.gateway.last_plans))].explain()
        assert why["candidates"]
