"""The walk (SPEC §3.2, §3.6) through the real server with the `openai` SDK: retries on the same route,
switches without retry for quota/unsupported, the commit point, reasoning before a failure, purpose
calls, and a client that leaves mid-walk."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest
from routing_helpers import (
    MESSAGES,
    MODEL,
    TOKENS,
    admin,
    ask,
    client,
    config,
    fleet_of,
    quick_provider,
    route_row,
    wait_for,
)

from gateway_server import GatewayServer
from modelpool.sim import Fault, FleetThread, expected_reasoning, expected_text


def test_a_single_500_on_a_stream_is_served_by_a_retry_on_the_same_route(fleet: FleetThread) -> None:
    fleet.set_faults("alpha", [Fault("server_error", times=1)])
    with GatewayServer(config(fleet, retries_per_route=2)) as gw:
        reply = ask(gw, stream=True)
        assert reply.route == "alpha/m1" and reply.attempts == 2
        assert "x-modelpool-switched" not in reply.headers
        assert reply.meta == {"route": "alpha/m1", "attempts": 2, "switched_from": None, "effort": None}
        assert reply.text == expected_text("alpha", MODEL, 6)
        # a miss that was retried away is not believed: alpha's health shows one clean success
        alpha = route_row(gw, "alpha/m1")
        assert (alpha["state"], alpha["attempts"], alpha["failures"]) == ("ok", 1, 0)
    assert [c.outcome for c in fleet.calls("alpha")] == ["server_error", "ok"]
    assert fleet.calls("beta") == []


@pytest.mark.parametrize("stream", [False, True], ids=["once", "stream"])
@pytest.mark.parametrize(("fault", "mark"), [("quota", "QUOTA-REST"), ("unsupported", "COOLDOWN")])
def test_quota_and_unsupported_switch_at_once_without_a_retry(
    fleet: FleetThread, fault: str, mark: str, stream: bool
) -> None:
    fleet.set_faults("alpha", [Fault(fault)])  # type: ignore[arg-type]
    with GatewayServer(config(fleet, retries_per_route=2)) as gw:
        reply = ask(gw, stream=stream)
        assert reply.served_by == "beta/m1" and reply.attempts == 2
        assert reply.headers["x-modelpool-switched"] == f"alpha/m1 → beta/m1 ({fault})"
        assert reply.text == expected_text("beta", MODEL, 6)
        alpha = route_row(gw, "alpha/m1")
        assert (alpha["last_error_kind"], alpha["mark"]) == (fault, mark)
    assert len(fleet.calls("alpha")) == 1  # never retried, although retries_per_route is 2


def test_a_cut_after_content_on_a_switched_route_raises_and_never_repeats_text() -> None:
    with (
        fleet_of(
            quick_provider("alpha", faults=[Fault("server_error")]),
            quick_provider("beta", faults=[Fault("cut", times=1, after_tokens=2)], tokens=6),
            quick_provider("gamma"),
        ) as ft,
        GatewayServer(config(ft, retries_per_route=1)) as gw,
    ):
        seen: list[str] = []
        with pytest.raises(openai.APIError):
            stream = client(gw).chat.completions.create(model=MODEL, messages=MESSAGES, stream=True)
            for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    seen.append(chunk.choices[0].delta.content)
        # only beta's first two tokens, each once: nothing of alpha, no retry, no switch to gamma
        assert seen == ["[beta:m1] tok0", " tok1"]
        assert [len(ft.calls(p)) for p in ("alpha", "beta", "gamma")] == [2, 1, 0]
        assert route_row(gw, "beta/m1")["last_error_kind"] == "network"
        # the next call walks past both resting routes and is whole again
        after = ask(gw, stream=True)
        assert after.served_by == "gamma/m1" and after.text == expected_text("gamma", MODEL, TOKENS)


def test_a_cut_non_streamed_body_is_before_the_commit_point_and_retried_whole(fleet: FleetThread) -> None:
    fleet.set_faults("alpha", [Fault("cut", times=1)])
    with GatewayServer(config(fleet)) as gw:
        reply = ask(gw)
        assert reply.route == "alpha/m1" and reply.attempts == 2
        assert reply.text == expected_text("alpha", MODEL, 6)
    assert [c.outcome for c in fleet.calls("alpha")] == ["cut", "ok"]


@pytest.mark.parametrize(
    "fault",
    [Fault("error_event", status=529), Fault("cut", after_tokens=0)],
    ids=["error-event", "connection-drop"],
)
def test_reasoning_then_a_failure_before_content_switches(fault: Fault) -> None:
    with (
        fleet_of(
            quick_provider("alpha", reasoning=3, faults=[fault]), quick_provider("beta", reasoning=3)
        ) as ft,
        GatewayServer(config(ft, retries_per_route=0)) as gw,
    ):
        reply = ask(gw, stream=True)  # the SDK sees an ordinary, complete stream
        assert reply.text == expected_text("beta", MODEL, TOKENS)
        # alpha's reasoning had already streamed; beta's follows it. Answer text never repeats.
        assert reply.reasoning == expected_reasoning("alpha", MODEL, 3) + expected_reasoning("beta", MODEL, 3)
        # the headers left with alpha's reasoning; the last chunk names the route that answered
        assert reply.meta == {"route": "beta/m1", "attempts": 2, "switched_from": "alpha/m1", "effort": None}
        kind = "server" if fault.kind == "error_event" else "network"
        assert route_row(gw, "alpha/m1")["last_error_kind"] == kind
        assert ft.calls("alpha")[0].content_tokens == 0


@pytest.mark.parametrize("stream", [False, True], ids=["once", "stream"])
def test_a_compaction_call_with_a_failing_first_route_returns_the_error(
    fleet: FleetThread, stream: bool
) -> None:
    fleet.set_faults("alpha", [Fault("server_error")])
    with GatewayServer(config(fleet, retries_per_route=2)) as gw:
        with pytest.raises(openai.APIStatusError) as info:
            ask(gw, session="chat", stream=stream, headers={"x-modelpool-purpose": "compaction"})
        assert info.value.status_code == 502
        assert [(a["route"], a["kind"]) for a in info.value.body["attempts"]] == [("alpha/m1", "server")]
        session = admin(gw, "/admin/sessions/chat")
        assert session["live_route"] is None and session["pins"] == {}
        assert [c["route"] for c in session["last_plan"]["candidates"]] == ["alpha/m1"]  # first only
    assert len(fleet.calls("alpha")) == 1  # no retry
    assert fleet.calls("beta") == []  # no switch


def test_a_purpose_call_goes_to_the_first_candidate_and_leaves_pin_and_live_route(
    fleet: FleetThread,
) -> None:
    with GatewayServer(config(fleet, strategy="round-robin")) as gw:
        assert ask(gw, session="other").route == "alpha/m1"
        assert ask(gw, session="chat").route == "beta/m1"  # chat is pinned to beta
        title = ask(gw, session="chat", headers={"x-modelpool-purpose": "session-title"})
        assert title.route == "alpha/m1"  # straight to the strategy's first candidate, pin ignored
        session = admin(gw, "/admin/sessions/chat")
        assert session["pins"] == {"m1": "beta/m1"}
        assert session["live_route"]["route"] == "beta/m1"
        assert ask(gw, session="chat").route == "beta/m1"


def test_a_client_that_leaves_while_the_first_route_thinks_stops_the_walk_and_closes_it() -> None:
    with (
        fleet_of(quick_provider("slow", ttft=30.0), quick_provider("beta")) as ft,
        GatewayServer(config(ft)) as gw,
    ):
        impatient = openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0, timeout=0.5)
        with pytest.raises(openai.APITimeoutError):
            for _ in impatient.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True):
                pass
        # the upstream request is closed at once (it would otherwise wait 30 s for its first token)
        wait_for(lambda: ft.calls("slow")[-1].outcome == "disconnected", what="upstream closed")
        time.sleep(0.3)  # room for a (wrong) switch to show up
        assert ft.calls("beta") == []
        assert route_row(gw, "slow/m1")["failures"] == 0  # a client leaving is not the route's fault
        assert not [e for e in gw.gateway.events.recent() if e["type"] in ("switch", "failure")]


def test_a_client_that_leaves_during_a_retry_wait_stops_the_walk() -> None:
    with (
        fleet_of(quick_provider("alpha", faults=[Fault("server_error")]), quick_provider("beta")) as ft,
        GatewayServer(config(ft, retries_per_route=2, retry_backoff="1s")) as gw,
    ):
        impatient = openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0, timeout=0.3)
        with pytest.raises(openai.APITimeoutError):
            impatient.chat.completions.create(model=MODEL, messages=MESSAGES)
        wait_for(lambda: len(ft.calls("alpha")) == 1, what="first attempt")
        time.sleep(1.5)  # past the 1 s retry wait: a walk still running would have retried by now
        assert len(ft.calls("alpha")) == 1
        assert ft.calls("beta") == []


def test_a_route_that_starts_resting_during_a_walk_is_passed_over_at_switch_time() -> None:
    with (
        fleet_of(
            quick_provider("alpha", faults=[Fault("server_error")]),
            quick_provider("beta", faults=[Fault("quota")]),
            quick_provider("gamma"),
        ) as ft,
        GatewayServer(config(ft, retries_per_route=1, retry_backoff="1s")) as gw,
        ThreadPoolExecutor(1) as pool,
    ):
        slow = pool.submit(ask, gw, session="slow")
        wait_for(lambda: len(ft.calls("alpha")) == 1, what="the slow call's first attempt")
        # while it waits to retry alpha, another call finds beta's quota wall
        with pytest.raises(openai.RateLimitError):
            ask(gw, headers={"x-modelpool-route": "beta/m1"})
        reply = slow.result(10)
        assert reply.route == "gamma/m1" and reply.attempts == 3  # alpha twice, then gamma
        assert reply.headers["x-modelpool-switched"] == "alpha/m1 → gamma/m1 (server)"
        # beta was a healthy candidate when the walk was planned, and was skipped once it rested
        assert [c["route"] for c in admin(gw, "/admin/sessions/slow")["last_plan"]["candidates"]] == [
            "alpha/m1",
            "beta/m1",
            "gamma/m1",
        ]
    assert len(ft.calls("beta")) == 1


@pytest.mark.parametrize("ingress", ["openai", "anthropic"])
def test_a_non_streamed_body_that_stalls_after_its_headers_is_a_stall_not_a_long_wait(
    fleet: FleetThread, ingress: str
) -> None:
    """Generating a non-streamed answer happens before the headers (bounded by `response`); once they
    arrived the body must flow. A body stalled mid-way fails the attempt as an `idle` stall and the walk
    moves on — it used to hold the call for the whole `response` timeout, then fail as a timeout."""
    fleet.set_faults("alpha", [Fault("stall", after_tokens=3, headers=True)])
    cfg = config(fleet, retries_per_route=0)
    cfg["timeouts"] = {"idle": "300ms", "response": "20s"}
    with GatewayServer(cfg) as gw:
        if ingress == "openai":
            reply = ask(gw)
            served, text = reply.served_by, reply.text
        else:
            import anthropic

            sdk = anthropic.Anthropic(base_url=gw.url, api_key="x", max_retries=0)
            raw = sdk.messages.with_raw_response.create(
                model=MODEL, max_tokens=64, messages=[{"role": "user", "content": MESSAGES[-1]["content"]}]
            )
            served, text = raw.headers["x-modelpool-route"], raw.parse().content[0].text  # type: ignore[union-attr]
        assert served == "beta/m1" and text == expected_text("beta", MODEL, 6)
        alpha = route_row(gw, "alpha/m1")
        assert alpha["last_error_kind"] == "network"
        assert "stall: no upstream data for 0.3 s" in alpha["last_error"]
