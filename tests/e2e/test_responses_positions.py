"""A habit of llama.cpp's llama-server the sim learned (issue #25): its Responses stream events carry no
`sequence_number`, `output_index` or `content_index`. The native relay completes them, so the OpenAI SDK's
`responses.stream()` helper works on defaults; an upstream that sends them keeps its bytes."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import orjson
import pytest

from gateway_server import GatewayServer
from modelpool.protocols.sse import SSEParser
from modelpool.sim import Fault, FleetSpec, FleetThread, SimModel, SimProvider, expected_text
from support import base_config

FAST = {"ttft": 0.002, "tps": 5000.0}
BODY = {"model": "m1", "input": "hi", "reasoning": {"effort": "high", "summary": "auto"}}
CONTENT_EVENTS = (
    "response.content_part.added",
    "response.content_part.done",
    "response.output_text.delta",
    "response.output_text.done",
)


@pytest.fixture(scope="module")
def ft() -> Iterator[FleetThread]:
    model = SimModel("m1", output_tokens=5, reasoning_tokens=3)
    bare = {"dialects": ("openai", "responses"), "models": [model], "responses_positions": False, **FAST}
    spec = FleetSpec(
        [
            SimProvider("bare", **bare),
            SimProvider("bare2", **bare),
            SimProvider("chat", models=[model], **FAST),
            SimProvider("full", dialects=("openai", "responses"), models=[model], **FAST),
        ]
    )
    with FleetThread(spec) as fleet:
        yield fleet


@pytest.fixture(autouse=True)
def _clean(ft: FleetThread) -> None:
    ft.reset_calls()
    for pid in ("bare", "bare2", "chat", "full"):
        ft.set_faults(pid, [])


def config(ft: FleetThread, order: list[str]) -> dict[str, Any]:
    cfg = base_config(ft, provider_order=order, retries_per_route=0, sticky=False)
    cfg["providers"] = [p for p in cfg["providers"] if p["id"] in order]
    return cfg


def events_of(raw: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(ev.data) for ev in SSEParser().feed(raw)]


def assert_positions(events: list[dict[str, Any]]) -> None:
    """As the Responses API defines them: events numbered 0, 1, 2 …; each item event at its item's place
    in the output; each content event at its part's place in that item (the sim's items have one)."""
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    where: dict[str, int] = {}
    for e in events:
        if e["type"] == "response.output_item.added":
            assert e["output_index"] == len(where)
            where[e["item"]["id"]] = e["output_index"]
        elif e["type"] == "response.output_item.done":
            assert e["output_index"] == where[e["item"]["id"]]
        elif "item_id" in e:
            assert e["output_index"] == where[e["item_id"]], e
        if e["type"] in CONTENT_EVENTS:
            assert e["content_index"] == 0, e
    assert len(where) == 2  # the reasoning item, then the message


def test_a_stream_without_positions_is_completed_for_the_sdk_helper(ft: FleetThread) -> None:
    with GatewayServer(config(ft, ["bare"])) as gw:
        client = openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
        with client.responses.stream(**BODY) as stream:
            final = stream.get_final_response()
        raw = httpx.post(gw.url + "/v1/responses", json={**BODY, "stream": True}, timeout=30).content
    assert final.output_text == expected_text("bare", "m1", 5)
    assert [c.path for c in ft.calls("bare")] == ["/v1/responses"] * 2  # native: the sim's own dialect
    events = events_of(raw)
    assert_positions(events)
    assert events[-1]["type"] == "response.completed" and events[-1]["response"]["modelpool"]["route"]
    # The upstream really left them out (what the relay completed).
    direct = events_of(httpx.post(ft.base_url("bare") + "/responses", json={**BODY, "stream": True}).content)
    assert not any("sequence_number" in e or "output_index" in e or "content_index" in e for e in direct)


@pytest.mark.parametrize(
    "first,then",
    [("bare", "bare2"), ("bare", "chat"), ("chat", "bare")],
    ids=["native-then-native", "native-then-translated", "translated-then-native"],
)
def test_failover_after_reasoning_continues_the_completed_numbering(
    ft: FleetThread, first: str, then: str
) -> None:
    """The first route thinks, then fails: the next attempt — native without positions, or translated —
    goes on from the numbers and places the client has already seen."""
    ft.set_faults(first, [Fault("error_event", status=529)])
    with GatewayServer(config(ft, [first, then])) as gw:
        raw = httpx.post(gw.url + "/v1/responses", json={**BODY, "stream": True}, timeout=30).content
    events = events_of(raw)
    kinds = [e["type"] for e in events]
    assert kinds.count("response.created") == 1 and kinds[-1] == "response.completed"
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    added = [e["output_index"] for e in events if e["type"] == "response.output_item.added"]
    assert added == list(range(len(added))) and len(added) == 3  # first's reasoning, then's reasoning, text
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    assert text == expected_text(then, "m1", 5)
    message = next(e for e in events if e["type"] == "response.output_text.delta")
    assert message["output_index"] == 2 and message["content_index"] == 0
    assert ft.calls("bare")[0].path == "/v1/responses"  # native
    done = [e["output_index"] for e in events if e["type"] == "response.output_item.done"]
    assert sorted(done) == [0, 1, 2]  # each item closed once, at its place (the first's, cut, included)


_GENERATED = re.compile(rb'"((?:resp|rs|msg)_[0-9a-f]{32})"|"created_at":\d+')


def test_an_upstream_that_sends_positions_keeps_its_bytes(ft: FleetThread) -> None:
    body = {**BODY, "stream": True}
    direct = httpx.post(ft.base_url("full") + "/responses", json=body, timeout=30).content
    with GatewayServer(config(ft, ["full"])) as gw:
        relayed = httpx.post(gw.url + "/v1/responses", json=body, timeout=30).content
    cut = b"event: response.completed"
    head, tail = relayed.split(cut)
    assert _GENERATED.sub(b"", head) == _GENERATED.sub(b"", direct.split(cut)[0])  # byte for byte
    assert orjson.loads(tail.split(b"data: ", 1)[1])["sequence_number"] == len(events_of(head))
