"""Hedged first token (SPEC §3.7) through the real server, with the openai and anthropic SDKs.

The simulated `alpha` is scripted to stall before its first byte; `beta` answers at once. The assertions
are on what the upstreams recorded (arrival, hang-up) and on what the client saw, not on tight timings:
the only clock comparison is "the client's first content came before alpha's scripted stall ended",
with a margin of seconds.
"""

from __future__ import annotations

import time
from typing import Any

import anthropic
import httpx
import openai
import pytest

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import Fault, FleetThread
from support import base_config

STALL = 4.0  # alpha's scripted silence before its first byte
MESSAGES = [{"role": "user", "content": "hello"}]
HEDGE = {"enabled": True, "after": "300ms", "budget": "100%"}


def hedge_config(fleet: FleetThread, hedge: dict[str, Any] | None = None, **pool: Any) -> dict[str, Any]:
    return base_config(fleet, hedge=HEDGE if hedge is None else hedge, **pool)


def slow_alpha(fleet: FleetThread, **kw: Any) -> None:
    fleet.set_faults("alpha", [Fault("stall", delay=STALL, **kw)])


def wait_disconnected(fleet: FleetThread, provider: str, timeout: float = 5.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        rec = fleet.calls(provider)[-1]
        if rec.disconnected:
            return rec
        assert time.monotonic() < deadline, f"{provider}'s request was never closed"
        time.sleep(0.05)


def status(gw: GatewayServer) -> dict[str, Any]:
    resp = httpx.get(gw.url + "/admin/status", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=5)
    return resp.json()  # type: ignore[no-any-return]


def openai_stream(gw: GatewayServer, session: str = "s1") -> tuple[str, dict[str, str], float]:
    """(the answer, the response headers, wall clock of the first content delta); the final chunk's
    `modelpool.hedged` is returned as the `hedged-meta` header."""
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0)
    raw = client.chat.completions.with_raw_response.create(
        model="m1", messages=MESSAGES, stream=True, extra_headers={"x-session-id": session}
    )
    first_at = 0.0
    text = ""
    meta: dict[str, Any] = {}
    for chunk in raw.parse():
        if chunk.choices and chunk.choices[0].delta.content:
            first_at = first_at or time.time()
            text += chunk.choices[0].delta.content
        meta = (chunk.model_extra or {}).get("modelpool") or meta
    headers = dict(raw.headers)
    headers["hedged-meta"] = str(meta.get("hedged"))
    return text, headers, first_at


@pytest.mark.parametrize("stream", [True, False])
def test_slow_first_route_loses_to_a_hedge_openai(fleet: FleetThread, stream: bool) -> None:
    slow_alpha(fleet)
    with GatewayServer(hedge_config(fleet)) as gw:
        if stream:
            text, headers, first_at = openai_stream(gw)
        else:
            client = openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0)
            raw = client.chat.completions.with_raw_response.create(
                model="m1", messages=MESSAGES, extra_headers={"x-session-id": "s1"}
            )
            first_at = time.time()
            headers = dict(raw.headers)
            completion = raw.parse()
            text = completion.choices[0].message.content or ""
        alpha = wait_disconnected(fleet, "alpha")
        # the client's first content came long before alpha would have sent its first byte
        assert first_at < alpha.time + STALL - 1.0
        assert fleet.calls("beta")[-1].time > alpha.time  # the hedge started after alpha
        assert headers["x-modelpool-route"] == "beta/m1"
        assert headers["x-modelpool-hedged"] == "alpha/m1 → beta/m1"
        if stream:
            assert headers["hedged-meta"] == "alpha/m1 → beta/m1"  # on the final event too
        assert headers["x-modelpool-attempts"] == "2"
        assert "tok0" in text
        reg = gw.gateway.health
        a = reg.snapshot("alpha/m1")
        # the loser is a measurement, not a failure: no failure count, no rest, one (censored) sample
        assert a.failures == 0 and a.rest_remaining == 0 and a.samples == 1
        assert a.median_ttft is not None and a.median_ttft >= 0.3
        # the winner is the session's pin
        assert [pin.route for pin in gw.gateway.pins.sessions().values()] == ["beta/m1"]
        events = [e for e in gw.gateway.events.recent() if e["type"] == "hedge"]
        assert events and events[-1]["outcome"] == "won_by_hedge"
        metrics = httpx.get(gw.url + "/metrics", headers=gw.admin_headers(), timeout=5).text
        assert 'modelpool_hedges_total{outcome="won_by_hedge"} 1.0' in metrics
