"""Sticky pins (SPEC §3.3, §3.1 step 7) through the real server: a conversation stays on its route,
a new conversation picks its own, a failed route hands the pin to the survivor, a pool starts fresh."""

from __future__ import annotations

from routing_helpers import (
    MODEL,
    TOKENS,
    FakeClock,
    admin,
    ask,
    config,
    fleet_of,
    plan_reasons,
    quick_provider,
)

from gateway_server import GatewayServer
from modelpool.sim import Fault, FleetThread, expected_text


def test_round_robin_with_sticky_keeps_a_conversation_and_rotates_conversations(fleet: FleetThread) -> None:
    with GatewayServer(config(fleet, strategy="round-robin")) as gw:
        first = [ask(gw, session="chat-1") for i in range(4)]
        assert [r.route for r in first] == ["alpha/m1"] * 4  # A A A A
        assert all(r.text == expected_text("alpha", MODEL, 6) for r in first)
        assert "sticky: this conversation's route" in plan_reasons(gw, "chat-1")["alpha/m1"]
        # a second conversation picks its own route (the next in the rotation), then stays there
        assert [ask(gw, session="chat-2").route for _ in range(3)] == ["beta/m1"] * 3
        assert ask(gw, session="chat-1").route == "alpha/m1"
        assert ask(gw, session="chat-3").route == "alpha/m1"  # the rotation goes on per conversation
        assert admin(gw, "/admin/sessions/chat-2")["pins"] == {"m1": "beta/m1"}


def test_without_sticky_one_conversation_rotates(fleet: FleetThread) -> None:
    with GatewayServer(config(fleet, strategy="round-robin", sticky=False)) as gw:
        assert [ask(gw, session="chat-1").route for _ in range(4)] == ["alpha/m1", "beta/m1"] * 2
        assert admin(gw, "/admin/sessions/chat-1")["pins"] == {}


def test_a_failed_pinned_route_hands_the_pin_to_the_survivor(fleet: FleetThread) -> None:
    # cooldown 1 ms: alpha is healthy again at once, so only the pin can keep the chat on beta
    with GatewayServer(config(fleet, retries_per_route=0, cooldown="1ms")) as gw:
        assert ask(gw, session="chat").route == "alpha/m1"
        assert admin(gw, "/admin/sessions/chat")["pins"] == {"m1": "alpha/m1"}
        fleet.set_faults("alpha", [Fault("server_error", times=1)])
        switched = ask(gw, session="chat")
        assert switched.served_by == "beta/m1"
        assert switched.text == expected_text("beta", MODEL, 6)
        session = admin(gw, "/admin/sessions/chat")
        assert session["pins"] == {"m1": "beta/m1"}  # adopt the switched route
        assert session["live_route"]["route"] == "beta/m1"
        assert session["live_route"]["switched_from"] == "alpha/m1"
        # alpha answers again, yet the conversation stays where it was served; a new one starts on alpha
        assert [ask(gw, session="chat").route for _ in range(2)] == ["beta/m1"] * 2
        assert ask(gw, session="other").route == "alpha/m1"


def test_a_pin_is_per_pool_a_different_pool_starts_fresh() -> None:
    with (
        fleet_of(
            quick_provider("alpha", models=("m1", "m2")), quick_provider("beta", models=("m1", "m2"))
        ) as ft,
        GatewayServer(config(ft, strategy="round-robin")) as gw,
    ):
        assert ask(gw, session="a").route == "alpha/m1"
        assert ask(gw, session="b").route == "beta/m1"
        # session b is on beta for m1, but m2 is another pool: its own rotation decides
        other = ask(gw, session="b", model="m2")
        assert other.route == "alpha/m2" and other.text == expected_text("alpha", "m2", TOKENS)
        assert admin(gw, "/admin/sessions/b")["pins"] == {"m1": "beta/m1", "m2": "alpha/m2"}
        assert ask(gw, session="b").route == "beta/m1"


def test_a_streamed_answer_pins_its_conversation_and_records_the_live_route(fleet: FleetThread) -> None:
    """SPEC §3.3/§8: the pin and the live route are set when the answer's terminal event is produced —
    for a streamed answer too (most agent harnesses stream every call)."""
    with GatewayServer(config(fleet, strategy="round-robin")) as gw:
        replies = [ask(gw, session="chat-s", stream=True) for _ in range(3)]
        assert [r.served_by for r in replies] == ["alpha/m1"] * 3
        session = admin(gw, "/admin/sessions/chat-s")
        assert session["pins"] == {"m1": "alpha/m1"}
        assert session["live_route"]["route"] == "alpha/m1"
        # The plan is explained when read (not on every call) and says why the pinned route came first.
        why = session["live_route"]["plan"]["candidates"][0]
        assert why["route"] == "alpha/m1" and "sticky: this conversation's route" in why["why"]


def test_a_pin_expires_after_the_providers_cache_lifetime_of_idleness(fleet: FleetThread) -> None:
    clock = FakeClock(1_741_586_400.0)  # 2025-03-10 06:00 UTC: a clock far from the real one
    cfg = config(fleet, strategy="round-robin")
    cfg["providers"][0]["cache_lifetime"] = "10m"  # alpha's prompt cache lives 10 minutes
    with GatewayServer(cfg, clock=clock) as gw:
        assert ask(gw, session="chat").route == "alpha/m1"
        clock.advance(9 * 60)
        assert ask(gw, session="chat").route == "alpha/m1"
        clock.advance(9 * 60)  # 18 min since the first call, 9 since the last: idleness is what counts
        assert ask(gw, session="chat").route == "alpha/m1"
        clock.advance(11 * 60)  # idle past the cache lifetime: the pin is gone, the rotation decides
        assert ask(gw, session="chat").route == "beta/m1"
        assert admin(gw, "/admin/sessions/chat")["pins"] == {"m1": "beta/m1"}
