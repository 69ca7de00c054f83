"""The Anthropic Messages provider, driven by the official anthropic SDK (and raw SSE where it matters)."""

from __future__ import annotations

import anthropic
import httpx
import orjson
import pytest

from modelpool.sim import Fault, FleetThread, expected_reasoning, expected_text, expected_tool_arguments

USER = [{"role": "user", "content": "hello"}]
TOOLS = [{"name": "lookup", "description": "look", "input_schema": {"type": "object", "properties": {}}}]


def client(fleet: FleetThread) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=fleet.base_url("claude"), api_key="x", max_retries=0, timeout=10)


def sse_events(raw: str) -> list[tuple[str, dict]]:
    out = []
    for frame in raw.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in frame.split("\n"))
        out.append((lines["event"], orjson.loads(lines["data"])))
    return out


def test_stream_text_and_usage(fleet: FleetThread) -> None:
    with client(fleet).messages.stream(model="m1", max_tokens=100, messages=USER) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == expected_text("claude", "m1", 5)
    assert final.stop_reason == "end_turn"
    assert final.usage.output_tokens == 5 and final.usage.input_tokens >= 1


def test_full_event_sequence_with_thinking(fleet: FleetThread) -> None:
    body = {"model": "thinker", "max_tokens": 100, "messages": USER, "stream": True}
    raw = httpx.post(fleet.root_url("claude") + "/v1/messages", json=body).text
    events = sse_events(raw)
    names = [e for e, _ in events]
    assert names[:2] == ["message_start", "ping"]
    assert names[-2:] == ["message_delta", "message_stop"]
    starts = [d["content_block"]["type"] for e, d in events if e == "content_block_start"]
    assert starts == ["thinking", "text"]
    deltas = [d["delta"]["type"] for e, d in events if e == "content_block_delta"]
    assert deltas == ["thinking_delta"] * 3 + ["signature_delta"] + ["text_delta"] * 4
    assert all(d["type"] == e for e, d in events)
    delta = events[-2][1]
    assert delta["delta"]["stop_reason"] == "end_turn" and delta["usage"]["output_tokens"] == 7


def test_thinking_through_sdk(fleet: FleetThread) -> None:
    msg = client(fleet).messages.create(model="thinker", max_tokens=100, messages=USER)
    assert msg.content[0].type == "thinking"
    assert msg.content[0].thinking == expected_reasoning("claude", "thinker", 3)
    assert msg.content[0].signature
    assert msg.content[1].type == "text" and msg.content[1].text == expected_text("claude", "thinker", 4)


def test_thinking_requested_on_a_plain_model(fleet: FleetThread) -> None:
    msg = client(fleet).messages.create(
        model="m1", max_tokens=2000, messages=USER, thinking={"type": "enabled", "budget_tokens": 1024}
    )
    assert [b.type for b in msg.content] == ["thinking", "text"]


def test_tool_use_stream(fleet: FleetThread) -> None:
    with client(fleet).messages.stream(model="m1", max_tokens=100, messages=USER, tools=TOOLS) as stream:
        final = stream.get_final_message()
    assert final.stop_reason == "tool_use"
    block = final.content[-1]
    assert block.type == "tool_use" and block.name == "lookup" and block.id.startswith("toolu_")
    assert block.input == orjson.loads(expected_tool_arguments("claude", "m1"))


def test_tool_result_turn_gets_text(fleet: FleetThread) -> None:
    messages = [
        *USER,
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "42"}]},
    ]
    msg = client(fleet).messages.create(model="m1", max_tokens=100, messages=messages, tools=TOOLS)
    assert msg.stop_reason == "end_turn" and msg.content[0].text == expected_text("claude", "m1", 5)


def test_max_tokens_required_and_capping(fleet: FleetThread) -> None:
    r = httpx.post(fleet.root_url("claude") + "/v1/messages", json={"model": "m1", "messages": USER})
    assert r.status_code == 400 and r.json()["type"] == "error"
    msg = client(fleet).messages.create(model="m1", max_tokens=2, messages=USER)
    assert msg.stop_reason == "max_tokens" and msg.content[0].text == expected_text("claude", "m1", 2)


def test_models_list_shape(fleet: FleetThread) -> None:
    page = client(fleet).models.list()
    assert [m.id for m in page.data] == ["m1", "thinker"]
    raw = httpx.get(fleet.root_url("claude") + "/v1/models").json()
    assert raw["has_more"] is False and raw["first_id"] == "m1" and raw["last_id"] == "thinker"


def test_count_tokens(fleet: FleetThread) -> None:
    r = client(fleet).messages.count_tokens(model="m1", messages=[{"role": "user", "content": "x" * 40}])
    assert r.input_tokens == 10


def test_errors_use_the_anthropic_shape(fleet: FleetThread) -> None:
    fleet.set_faults("claude", [Fault("quota")])
    with pytest.raises(anthropic.RateLimitError) as exc:
        client(fleet).messages.create(model="m1", max_tokens=10, messages=USER)
    body = exc.value.body
    assert isinstance(body, dict) and body["type"] == "error"
    assert body["error"]["type"] == "billing_error" and "余额不足" in body["error"]["message"]


def test_mid_stream_error_event_raises(fleet: FleetThread) -> None:
    fleet.set_faults("claude", [Fault("error_event", after_tokens=2)])
    seen = []
    with pytest.raises(anthropic.APIStatusError, match="Overloaded"):  # noqa: SIM117
        with client(fleet).messages.stream(model="m1", max_tokens=100, messages=USER) as stream:
            for text in stream.text_stream:
                seen.append(text)
    assert "".join(seen) == expected_text("claude", "m1", 2)


def test_cut_and_no_terminator(fleet: FleetThread) -> None:
    body = {"model": "m1", "max_tokens": 100, "messages": USER, "stream": True}
    fleet.set_faults("claude", [Fault("no_terminator")])
    raw = httpx.post(fleet.root_url("claude") + "/v1/messages", json=body).text
    assert "message_delta" in raw and "message_stop" not in raw
    fleet.set_faults("claude", [Fault("cut", after_tokens=1)])
    with pytest.raises(httpx.HTTPError):
        httpx.post(fleet.root_url("claude") + "/v1/messages", json=body)
