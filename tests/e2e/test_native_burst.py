"""The native relays' unparsed path after the commit point (issue #17's CPU goal): a burst reply — the whole
answer in one upstream read, terminator included — and a paced one still reach the client exactly as the
upstream sent them, and an error after the commit point is numbered after the last event forwarded."""

from __future__ import annotations

import httpx
import orjson
import pytest

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.protocols.sse import SSEParser
from modelpool.sim import Fault, FleetSpec, FleetThread, SimModel, SimProvider

TOKENS = 60
MODELS = [
    SimModel("burst", output_tokens=TOKENS),  # fast fleet: the whole reply in one write
    SimModel("paced", output_tokens=TOKENS, tps=400.0, ttft=0.0),  # about one token per read
]


@pytest.fixture(scope="module")
def ft() -> FleetThread:
    spec = FleetSpec(
        [
            SimProvider("an", kind="anthropic", models=MODELS),
            SimProvider("ra", dialects=("openai", "responses"), models=MODELS),
        ],
        fast=True,
    )
    with FleetThread(spec) as fleet:
        yield fleet


@pytest.fixture(autouse=True)
def _clean(ft: FleetThread) -> None:
    for pid in ("an", "ra"):
        ft.set_faults(pid, [])


def gateway(ft: FleetThread, provider: str) -> GatewayServer:
    cfg = ft.to_config(state={"backend": "memory"}, server={"admin_token": ADMIN_TOKEN})
    cfg["providers"] = [p for p in cfg["providers"] if p["id"] == provider]
    cfg["pool"] = {"strategy": "priority", "sticky": False}
    return GatewayServer(cfg)


def events(raw: bytes) -> list[tuple[str | None, dict]]:
    return [(ev.event, orjson.loads(ev.data)) for ev in SSEParser().feed(raw)]


def without_ids(value: object) -> object:
    if isinstance(value, dict):
        skip = ("id", "item_id", "created_at")
        return {k: without_ids(v) for k, v in value.items() if k not in skip}
    if isinstance(value, list):
        return [without_ids(v) for v in value]
    return value


CASES = {
    "anthropic": (
        "an",
        "/v1/messages",
        {"max_tokens": 1024, "messages": [{"role": "user", "content": "hi"}]},
    ),
    "responses": ("ra", "/v1/responses", {"input": [{"role": "user", "content": "hi"}]}),
}


@pytest.mark.parametrize("model", ["burst", "paced"])
@pytest.mark.parametrize("dialect", sorted(CASES))
def test_native_stream_is_the_upstreams_event_for_event(ft: FleetThread, dialect: str, model: str) -> None:
    provider, path, body = CASES[dialect]
    body = {**body, "model": model, "stream": True}
    direct = httpx.post(ft.root_url(provider) + path, json=body, timeout=30)
    with gateway(ft, provider) as gw:
        relayed = httpx.post(gw.url + path, json=body, timeout=30)
    assert relayed.status_code == 200, relayed.text
    mine, theirs = events(relayed.content), events(direct.content)
    assert [e for e, _ in mine] == [e for e, _ in theirs] and len(mine) > TOKENS
    for (event, got), (_, want) in zip(mine, theirs, strict=True):
        if event == "message_delta":
            assert got.pop("modelpool")["route"] == f"{provider}/{model}"
        if event == "response.completed":
            assert got["response"].pop("modelpool")["route"] == f"{provider}/{model}"
        assert without_ids(got) == without_ids(want)


@pytest.mark.parametrize("model", ["burst", "paced"])
def test_a_responses_error_after_the_commit_point_is_numbered_after_the_last_event(
    ft: FleetThread, model: str
) -> None:
    # The pause puts the error in a read of its own: the deltas before it went out unparsed.
    ft.set_faults("ra", [Fault("error_event", after_tokens=TOKENS // 2, delay=0.05)])
    provider, path, body = CASES["responses"]
    with gateway(ft, provider) as gw:
        relayed = httpx.post(gw.url + path, json={**body, "model": model, "stream": True}, timeout=30)
    got = events(relayed.content)
    deltas = [obj for event, obj in got if event == "response.output_text.delta"]
    assert len(deltas) == TOKENS // 2 and got[-1][0] == "error"
    numbers = [obj["sequence_number"] for _, obj in got]
    assert numbers == sorted(set(numbers)) and numbers[-1] == numbers[-2] + 1


TERMINATORS = {"anthropic": "message_stop", "responses": "response.completed"}


@pytest.mark.parametrize("model", ["burst", "paced"])
@pytest.mark.parametrize("dialect", sorted(CASES))
def test_a_malformed_event_after_the_commit_point_ends_the_stream_in_an_error(
    ft: FleetThread, dialect: str, model: str
) -> None:
    """Bytes forwarded unparsed are screened for a truncated JSON event: the relay never passes one on
    and then completes the stream as if nothing happened."""
    provider, path, body = CASES[dialect]
    ft.set_faults(provider, [Fault("malformed", after_tokens=TOKENS // 2)])
    with gateway(ft, provider) as gw:
        relayed = httpx.post(gw.url + path, json={**body, "model": model, "stream": True}, timeout=30)
    names = [ev.event for ev in SSEParser().feed(relayed.content)]
    assert names[-1] == "error" and TERMINATORS[dialect] not in names
    assert b'"delta":\n' not in relayed.content  # the truncated event itself never reached the client
