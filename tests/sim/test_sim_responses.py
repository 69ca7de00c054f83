"""The OpenAI Responses dialect (`/v1/responses`), driven by the official openai SDK and raw SSE.

Every streamed event is validated against the SDK's own `ResponseStreamEvent` models (pydantic, required
fields enforced), so a shape the real API would not send fails here.
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest
from openai import BadRequestError, OpenAI
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from modelpool.sim import Fault, FleetThread, expected_reasoning, expected_text, expected_tool_arguments

EVENTS: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
CUSTOM = {
    "type": "custom",
    "name": "apply_patch",
    "description": "edit files",
    "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"},
}
FUNCTION = {"type": "function", "name": "lookup", "parameters": {"type": "object", "properties": {}}}


def client(fleet: FleetThread, provider: str = "omni") -> OpenAI:
    return OpenAI(base_url=fleet.base_url(provider), api_key="x", max_retries=0, timeout=10)


def raw_stream(fleet: FleetThread, body: dict[str, Any], provider: str = "omni") -> list[tuple[str, dict]]:
    """POST a streamed call; return (event name, data) pairs, each checked against the SDK's models."""
    raw = httpx.post(fleet.root_url(provider) + "/v1/responses", json={**body, "stream": True}, timeout=10)
    assert raw.status_code == 200 and raw.headers["content-type"].startswith("text/event-stream")
    out = []
    for frame in raw.text.strip().split("\n\n"):
        name_line, data_line = frame.split("\n")
        name, data = name_line.removeprefix("event: "), orjson.loads(data_line.removeprefix("data: "))
        assert data["type"] == name
        EVENTS.validate_python(data)
        out.append((name, data))
    return out


def test_text_non_stream(fleet: FleetThread) -> None:
    resp = client(fleet).responses.create(model="m1", input="hello")
    assert resp.status == "completed" and resp.output_text == expected_text("omni", "m1", 5)
    assert resp.usage is not None and resp.usage.output_tokens == 5
    assert resp.id.startswith("resp_") and resp.output[0].type == "message"
    Response.model_validate(resp.model_dump())  # the whole object passes the SDK's strict model


def test_stream_event_sequence(fleet: FleetThread) -> None:
    events = raw_stream(fleet, {"model": "m1", "input": [{"role": "user", "content": "hi"}]})
    names = [n for n, _ in events]
    assert names[:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert names.count("response.output_text.delta") == 5
    assert names[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [d["sequence_number"] for _, d in events] == list(range(len(events)))
    done = events[-1][1]["response"]
    assert done["status"] == "completed" and done["output"][0]["content"][0]["text"] == expected_text(
        "omni", "m1", 5
    )
    assert events[-4][1]["text"] == expected_text("omni", "m1", 5)


def test_sdk_stream_accumulates(fleet: FleetThread) -> None:
    with client(fleet).responses.stream(model="m1", input="hello") as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(deltas) == final.output_text == expected_text("omni", "m1", 5)


def test_reasoning_summary_and_encrypted_content(fleet: FleetThread) -> None:
    body = {
        "model": "thinker",
        "input": "think",
        "reasoning": {"effort": "high", "summary": "auto"},
        "include": ["reasoning.encrypted_content"],
    }
    events = raw_stream(fleet, body)
    deltas = [d["delta"] for n, d in events if n == "response.reasoning_summary_text.delta"]
    assert "".join(deltas) == expected_reasoning("omni", "thinker", 3)
    item = next(d["item"] for n, d in events if n == "response.output_item.done")
    assert item["type"] == "reasoning" and item["encrypted_content"].startswith("gAAAAB")
    usage = events[-1][1]["response"]["usage"]
    assert usage["output_tokens_details"]["reasoning_tokens"] == 3 and usage["output_tokens"] == 7


def test_reasoning_without_summary_or_include(fleet: FleetThread) -> None:
    resp = client(fleet).responses.create(model="thinker", input="think")
    reasoning = resp.output[0]
    assert reasoning.type == "reasoning" and reasoning.summary == [] and reasoning.encrypted_content is None
    assert resp.output_text == expected_text("omni", "thinker", 4)
    assert resp.usage is not None and resp.usage.output_tokens_details.reasoning_tokens == 3


def test_function_call_stream(fleet: FleetThread) -> None:
    events = raw_stream(fleet, {"model": "m1", "input": "use it", "tools": [FUNCTION]})
    names = [n for n, _ in events]
    assert "response.function_call_arguments.delta" in names
    args = "".join(d["delta"] for n, d in events if n == "response.function_call_arguments.delta")
    assert args == expected_tool_arguments("omni", "m1")
    done = next(d for n, d in events if n == "response.function_call_arguments.done")
    assert done["arguments"] == args
    item = events[-1][1]["response"]["output"][0]
    assert (
        item["type"] == "function_call" and item["name"] == "lookup" and item["call_id"].startswith("call_")
    )


def test_custom_tool_call_through_sdk(fleet: FleetThread) -> None:
    with client(fleet).responses.stream(model="m1", input="edit", tools=[CUSTOM]) as stream:  # type: ignore[list-item]
        names = [e.type for e in stream]
        final = stream.get_final_response()
    assert (
        "response.custom_tool_call_input.delta" in names and "response.custom_tool_call_input.done" in names
    )
    call = final.output[0]
    assert call.type == "custom_tool_call" and call.name == "apply_patch"


def test_incomplete_at_max_output_tokens(fleet: FleetThread) -> None:
    events = raw_stream(fleet, {"model": "m1", "input": "hi", "max_output_tokens": 2})
    assert events[-1][0] == "response.incomplete"
    final = events[-1][1]["response"]
    assert final["incomplete_details"] == {"reason": "max_output_tokens"}
    resp = client(fleet).responses.create(model="m1", input="hi", max_output_tokens=2)
    assert resp.status == "incomplete" and resp.output_text == expected_text("omni", "m1", 2)


def test_web_search_call_and_url_citation(fleet: FleetThread) -> None:
    events = raw_stream(fleet, {"model": "searcher", "input": "news?", "tools": [{"type": "web_search"}]})
    names = [n for n, _ in events]
    assert "response.web_search_call.completed" in names
    assert "response.output_text.annotation.added" in names
    output = events[-1][1]["response"]["output"]
    assert [o["type"] for o in output] == ["web_search_call", "message"]
    assert output[1]["content"][0]["annotations"][0]["type"] == "url_citation"
    assert events[-1][1]["response"]["usage"]["input_tokens_details"]["cached_tokens"] >= 1


def test_previous_response_id(fleet: FleetThread) -> None:
    c = client(fleet)
    first = c.responses.create(model="m1", input="one")
    follow = c.responses.create(model="m1", input="two", previous_response_id=first.id)
    assert follow.previous_response_id == first.id and follow.status == "completed"
    with pytest.raises(BadRequestError) as info:
        c.responses.create(model="m1", input="two", previous_response_id="resp_unknown")
    assert info.value.code == "previous_response_not_found"
    assert info.value.body["param"] == "previous_response_id"  # type: ignore[index]
    # Another provider never stored it: a follow-up must go to the route that produced the response.
    with pytest.raises(BadRequestError):
        client(fleet, "vercel").responses.create(
            model="deepseek/deepseek-v4.1-flash-1017", input="two", previous_response_id=first.id
        )
    # store: false responses cannot be continued (like OpenAI).
    unstored = c.responses.create(model="m1", input="one", store=False)
    with pytest.raises(BadRequestError):
        c.responses.create(model="m1", input="two", previous_response_id=unstored.id)


def test_previous_response_id_streamed_unknown(fleet: FleetThread) -> None:
    body = {"model": "m1", "input": "x", "previous_response_id": "resp_nope", "stream": True}
    raw = httpx.post(fleet.root_url("omni") + "/v1/responses", json=body)
    assert raw.status_code == 400 and raw.json()["error"]["code"] == "previous_response_not_found"


def test_error_event_keeps_sequence(fleet: FleetThread) -> None:
    fleet.set_faults("omni", [Fault("error_event", after_tokens=2, times=1)])
    raw = httpx.post(
        fleet.root_url("omni") + "/v1/responses", json={"model": "m1", "input": "x", "stream": True}
    )
    frames = [orjson.loads(f.split("\ndata: ")[1]) for f in raw.text.strip().split("\n\n")]
    assert [f["sequence_number"] for f in frames] == list(range(len(frames)))
    last = frames[-1]
    assert last["type"] == "response.failed" and last["response"]["status"] == "failed"
    assert last["response"]["error"]["message"] == "Overloaded"
    assert sum(f["type"] == "response.output_text.delta" for f in frames) == 2
    EVENTS.validate_python(last)


def test_status_fault_and_bad_input_use_openai_error_shape(fleet: FleetThread) -> None:
    fleet.set_faults("omni", [Fault("quota", times=1)])
    raw = httpx.post(fleet.root_url("omni") + "/v1/responses", json={"model": "m1", "input": "x"})
    assert raw.status_code == 429 and raw.json()["error"]["code"] == "insufficient_quota"
    missing = httpx.post(fleet.root_url("omni") + "/v1/responses", json={"model": "m1"})
    assert missing.status_code == 400 and "input" in missing.json()["error"]["message"]
    unknown = httpx.post(fleet.root_url("omni") + "/v1/responses", json={"model": "nope", "input": "x"})
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "model_not_found"
