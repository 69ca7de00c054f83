"""Hedged first token (SPEC §3.7) through the real server, with the openai and anthropic SDKs.

The simulated `alpha` is scripted to stall before its first byte; `beta` answers at once. The assertions
are on what the upstreams recorded (arrival, hang-up) and on what the client saw, not on tight timings:
the only clock comparison is "the client's first content came before alpha's scripted stall ended",
with a margin of seconds.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

import anthropic
import httpx
import openai
import pytest

from gateway_server import GatewayServer
from modelpool.sim import Fault, FleetSpec, FleetThread, SimModel, SimProvider
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


def eventually(check: Callable[[], bool], timeout: float = 5.0) -> None:
    """What the gateway records when the call ends (pin, metrics) may trail the client's last event."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "never became true"
        time.sleep(0.05)


def metrics(gw: GatewayServer) -> str:
    return httpx.get(gw.url + "/metrics", headers=gw.admin_headers(), timeout=5).text


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
        # the winner is the session's pin (set when the walk returns, just after the client's last event)
        eventually(lambda: [pin.route for pin in gw.gateway.pins.sessions().values()] == ["beta/m1"])
        events = [e for e in gw.gateway.events.recent() if e["type"] == "hedge"]
        assert events and events[-1]["outcome"] == "won_by_hedge"
        eventually(lambda: 'modelpool_hedges_total{outcome="won_by_hedge"} 1.0' in metrics(gw))


def anthropic_fleet() -> FleetThread:
    return FleetThread(
        FleetSpec(
            [
                SimProvider("alpha", kind="anthropic", models=[SimModel("m1", output_tokens=6)], ttft=0.005),
                SimProvider("beta", kind="anthropic", models=[SimModel("m1", output_tokens=6)], ttft=0.005),
            ]
        )
    )


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("stream", [True, False])
def test_slow_first_route_loses_to_a_hedge_anthropic(fleet: FleetThread, native: bool, stream: bool) -> None:
    """Anthropic ingress: native (Messages routes) and translated (Chat Completions routes)."""
    with contextlib.ExitStack() as stack:
        ft = stack.enter_context(anthropic_fleet()) if native else fleet
        slow_alpha(ft)
        gw = stack.enter_context(GatewayServer(hedge_config(ft)))
        client = anthropic.Anthropic(base_url=gw.url, api_key="x", max_retries=0)
        args: dict[str, Any] = {"model": "m1", "max_tokens": 64, "messages": MESSAGES}
        if stream:
            first_at, text, stop = 0.0, "", None
            with client.messages.stream(**args) as s:
                headers = dict(s.response.headers)
                for event in s:
                    if event.type == "content_block_delta" and event.delta.type == "text_delta":
                        first_at = first_at or time.time()
                        text += event.delta.text
                    if event.type == "message_delta":
                        stop = event.model_extra
        else:
            raw = client.messages.with_raw_response.create(**args)
            first_at, headers = time.time(), dict(raw.headers)
            text = "".join(b.text for b in raw.parse().content if b.type == "text")
        alpha = wait_disconnected(ft, "alpha")
        assert first_at < alpha.time + STALL - 1.0
        assert headers["x-modelpool-hedged"] == "alpha/m1 → beta/m1"
        assert "tok0" in text and "tok5" in text
        if stream:
            assert stop is not None and stop["modelpool"]["hedged"] == "alpha/m1 → beta/m1"
        assert gw.gateway.health.snapshot("alpha/m1").failures == 0


def test_no_hedge_when_the_first_route_is_fast(fleet: FleetThread) -> None:
    with GatewayServer(hedge_config(fleet)) as gw:
        for _ in range(3):
            _text, headers, _ = openai_stream(gw)
            assert "x-modelpool-hedged" not in headers and headers["x-modelpool-route"] == "alpha/m1"
    assert fleet.calls("beta") == []


def test_no_hedge_by_default(fleet: FleetThread) -> None:
    fleet.set_faults("alpha", [Fault("stall", delay=1.0)])
    with GatewayServer(base_config(fleet)) as gw:
        _text, headers, _ = openai_stream(gw)
    assert "x-modelpool-hedged" not in headers and headers["x-modelpool-route"] == "alpha/m1"
    assert fleet.calls("beta") == []


def test_no_hedge_after_content_started(fleet: FleetThread) -> None:
    # alpha sends two tokens at once, then goes silent for longer than `after`: the commit point is past
    fleet.set_faults("alpha", [Fault("stall", after_tokens=2, delay=1.0)])
    with GatewayServer(hedge_config(fleet)) as gw:
        text, headers, _ = openai_stream(gw)
    assert "x-modelpool-hedged" not in headers and "tok5" in text
    assert fleet.calls("beta") == []


def test_no_hedge_after_reasoning_reached_the_client() -> None:
    """Reasoning is a first event: it decides the race, and a slow answer after it is never hedged."""
    spec = FleetSpec(
        [
            # 20 reasoning tokens at 20 tok/s: the answer starts a second after the first reasoning event
            SimProvider("alpha", models=[SimModel("m1", output_tokens=4, reasoning_tokens=20)], tps=20.0),
            SimProvider("beta", models=[SimModel("m1", output_tokens=4)], ttft=0.005),
        ]
    )
    with FleetThread(spec) as ft, GatewayServer(hedge_config(ft)) as gw:
        text, headers, _ = openai_stream(gw)
        assert "x-modelpool-hedged" not in headers and headers["x-modelpool-route"] == "alpha/m1"
        assert "tok3" in text
        assert ft.calls("beta") == []


def test_budget_caps_hedges_over_a_run_of_slow_calls(fleet: FleetThread) -> None:
    fleet.set_faults("alpha", [Fault("stall", delay=1.0)])
    cfg = hedge_config(fleet, {**HEDGE, "budget": "50%"}, sticky=False)
    with GatewayServer(cfg) as gw:
        routes = [openai_stream(gw, session=f"s{i}")[1].get("x-modelpool-hedged") for i in range(4)]
        # hedges < 50% of the last minute's calls: the 1st and 3rd call hedge, the 2nd and 4th wait
        assert routes == ["alpha/m1 → beta/m1", None, "alpha/m1 → beta/m1", None]
        outcomes = [e["outcome"] for e in gw.gateway.events.recent() if e["type"] == "hedge"]
        assert outcomes == ["won_by_hedge", "budget_refused", "won_by_hedge", "budget_refused"]
        eventually(lambda: 'modelpool_hedges_total{outcome="budget_refused"} 2.0' in metrics(gw))
    assert len(fleet.calls("beta")) == 2


@pytest.mark.parametrize("how", ["purpose", "forced", "no-fallback"])
def test_purpose_forced_and_no_fallback_never_hedge(fleet: FleetThread, how: str) -> None:
    fleet.set_faults("alpha", [Fault("stall", delay=1.0)])
    cfg = hedge_config(fleet, fallback=how != "no-fallback")
    extra = {"purpose": {"x-modelpool-purpose": "compaction"}, "forced": {"x-modelpool-route": "alpha/m1"}}
    with GatewayServer(cfg) as gw:
        resp = httpx.post(
            gw.url + "/v1/chat/completions",
            json={"model": "m1", "messages": MESSAGES, "stream": True},
            headers=extra.get(how, {}),
            timeout=10,
        )
    assert resp.status_code == 200 and "tok5" in resp.text
    assert "x-modelpool-hedged" not in resp.headers and resp.headers["x-modelpool-route"] == "alpha/m1"
    assert fleet.calls("beta") == []


def test_a_failing_hedge_lets_the_first_attempt_continue(fleet: FleetThread) -> None:
    fleet.set_faults("alpha", [Fault("stall", delay=1.0)])
    fleet.set_faults("beta", [Fault("server_error")])
    with GatewayServer(hedge_config(fleet)) as gw:
        text, headers, _ = openai_stream(gw)
        assert headers["x-modelpool-route"] == "alpha/m1" and "tok5" in text
        assert "x-modelpool-hedged" not in headers  # the hedge failed: there was no race to win
        assert gw.gateway.health.snapshot("beta/m1").failures == 1  # a real failure is still one
        assert gw.gateway.health.snapshot("alpha/m1").failures == 0


def test_after_p95_adapts_once_a_warmed_route_turns_slow(fleet: FleetThread) -> None:
    from modelpool.hedge import hedge_delay

    cfg = hedge_config(fleet, {**HEDGE, "after": "p95", "min_delay": "50ms", "max_delay": "5s"})
    with GatewayServer(cfg) as gw:
        pool = gw.gateway.runtime.config.pool

        def delay() -> float:
            return hedge_delay(pool.hedge, "alpha/m1", gw.gateway.health.ttft_quantile)

        assert delay() == 5.0  # fewer than 5 samples: max_delay
        for i in range(6):
            openai_stream(gw, session=f"warm{i}")
        warm = delay()
        assert warm < 0.35  # its own fast p95 (the floor, or a little above on a busy machine)
        # alpha turns slow (0.4 s to its first byte); beta is slower still, so alpha keeps winning
        fleet.set_faults("alpha", [Fault("stall", delay=0.4)])
        fleet.set_faults("beta", [Fault("stall", delay=2.0)])
        hedged = [openai_stream(gw, session=f"slow{i}")[1].get("x-modelpool-hedged") for i in range(6)]
        assert hedged[0] == "beta/m1 → alpha/m1"  # slow against its warm history: hedged, won by alpha
        # its new speed replaced the warm window (two samples at twice the EWMA restart it): p95 ≥ 0.4 s,
        # so a call as slow as alpha now is no longer a tail worth hedging
        assert 0.4 <= delay() < 2.0
        outcomes = {e["outcome"] for e in gw.gateway.events.recent() if e["type"] == "hedge"}
        assert outcomes == {"won_by_first"}


def test_responses_ingress_hedges_too(fleet: FleetThread) -> None:
    """The Responses dialect (translated to the Chat Completions routes here) races the same way."""
    slow_alpha(fleet)
    with GatewayServer(hedge_config(fleet)) as gw:
        client = openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0)
        raw = client.responses.with_raw_response.create(model="m1", input="hello", stream=True)
        text = "".join(e.delta for e in raw.parse() if e.type == "response.output_text.delta")
        assert raw.headers["x-modelpool-hedged"] == "alpha/m1 → beta/m1"
        assert "tok5" in text
        wait_disconnected(fleet, "alpha")


def test_a_first_attempt_failing_during_the_race_leaves_the_call_to_the_rival(fleet: FleetThread) -> None:
    """The first try runs in the walk's own task (issue #21): when it fails while the rival runs, the walk
    neither retries nor switches: the rival's answer is the call's, and the first route counts a failure."""
    fleet.set_faults("alpha", [Fault("server_error", delay=0.8)])
    fleet.set_faults("beta", [Fault("stall", delay=1.5)])
    with GatewayServer(hedge_config(fleet)) as gw:
        text, headers, _ = openai_stream(gw)
        assert headers["x-modelpool-route"] == "beta/m1" and "tok5" in text
        assert gw.gateway.health.snapshot("alpha/m1").failures == 1
        assert len(fleet.calls("alpha")) == 1  # no retry on the first route after the hedge started
        assert gw.gateway.health.snapshot("beta/m1").failures == 0


def test_a_client_leaving_mid_race_closes_both_upstream_requests(fleet: FleetThread) -> None:
    """The client's disconnect cancels the walk: not taken for the race's own cut of the first try."""
    slow_alpha(fleet)
    fleet.set_faults("beta", [Fault("stall", delay=STALL)])
    with GatewayServer(hedge_config(fleet)) as gw:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(
                gw.url + "/v1/chat/completions",
                json={"model": "m1", "messages": MESSAGES, "stream": True},
                timeout=1.0,
            )
        assert wait_disconnected(fleet, "alpha").disconnected
        assert wait_disconnected(fleet, "beta").disconnected
        # The gateway is fine afterwards: the next call is served (the stalls are one-shot per call).
        fleet.set_faults("alpha", [])
        fleet.set_faults("beta", [])
        text, _, _ = openai_stream(gw, session="s2")
        assert "tok5" in text
