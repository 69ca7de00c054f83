"""What a Gemini route's reply carries that another dialect cannot express is named, streamed and not.

A chat, Messages or Responses client on a route that speaks only the Gemini API: the route signs its
reasoning (`thoughtSignature`, which only Gemini can verify and no other dialect can carry back), so the
signature is left out of the reply and named — in the final event's `modelpool.dropped` of a stream, and
in `x-modelpool-dropped` and the body's metadata of a whole reply (which used to say nothing).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from gateway_server import GatewayServer
from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider

KEY = "mp-gemini-route-key"
HI = [{"role": "user", "content": "hi"}]
CALLS = {
    "openai": ("/v1/chat/completions", {"model": "m1", "messages": HI, "reasoning_effort": "low"}),
    "anthropic": (
        "/v1/messages",
        {
            "model": "m1",
            "max_tokens": 100,
            "messages": HI,
            "thinking": {"type": "enabled", "budget_tokens": 1024},
        },
    ),
    "responses": ("/v1/responses", {"model": "m1", "input": "hi", "reasoning": {"effort": "low"}}),
}


@pytest.fixture(scope="module")
def gw() -> Iterator[GatewayServer]:
    model = SimModel("m1", reasoning_tokens=2, output_tokens=4)
    spec = FleetSpec([SimProvider("gem", kind="gemini", dialects=("gemini",), models=[model], ttft=0.001)])
    with FleetThread(spec) as fleet:
        cfg = fleet.to_config(state={"backend": "memory"}, server={"api_keys": [KEY]})
        with GatewayServer(cfg) as server:
            yield server


def final_metadata(text: str) -> dict[str, Any]:
    """The `modelpool` metadata of a stream: on its last event that has one."""
    objs = [orjson.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {")]
    found = [o.get("modelpool") or (o.get("response") or {}).get("modelpool") for o in objs]
    return next(m for m in reversed(found) if m)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("dialect", list(CALLS))
def test_the_routes_thought_signature_is_named(gw: GatewayServer, dialect: str, stream: bool) -> None:
    path, body = CALLS[dialect]
    resp = httpx.post(
        gw.url + path, headers={"authorization": f"Bearer {KEY}"}, json={**body, "stream": stream}, timeout=30
    )
    assert resp.status_code == 200, resp.text
    assert "[gem:m1]" in resp.text
    if stream:
        meta = final_metadata(resp.text)
    else:
        assert resp.headers["x-modelpool-dropped"] == "thoughtSignature"
        obj = resp.json()
        meta = obj["modelpool"]
    assert meta["route"] == "gem/m1" and meta["dropped"] == ["thoughtSignature"], meta
