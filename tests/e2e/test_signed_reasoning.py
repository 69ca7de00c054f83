"""Signed reasoning belongs to its signer (SPEC §3.10), through the real gateway: multi-turn conversations
under round-robin and forced failovers across routes that each reject another's signatures (the sim's
provenance check, as Anthropic and OpenAI do) never end in a signature error. Every turn is checked against
what each sim route was sent for it (`signed_turns.check_turn`): no route gets another's signature; every
attempt on a route — the one that serves, a failed one, a retry — carries every signature that route made
earlier in the conversation, unchanged; and whenever a route other than a signature's signer serves,
`x-modelpool-dropped` names what was left out. Streamed and non-streamed turns are mixed (every third turn
streamed: the phase moves against the round-robin, so each route serves both kinds)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from signed_turns import check_turn, run_turn

from gateway_server import GatewayServer
from modelpool.sim import Fault, FleetSpec, FleetThread, SimModel, SimProvider
from support import base_config

CALLS = 200
TURNS = 5  # a conversation's turns before the next conversation starts


def _model() -> SimModel:
    return SimModel("m1", reasoning_tokens=3, output_tokens=4)


def _fast(pid: str, **kw: Any) -> SimProvider:
    return SimProvider(pid, models=[_model()], ttft=0.002, tps=5000.0, **kw)


def _converse(
    fleet: FleetThread, cfg: dict[str, Any], client: str, signing: set[str], native: set[str]
) -> None:
    """CALLS turns in conversations of TURNS, every third one streamed, each checked as it ends; then that
    the checks met both cases, streamed and not: the signer serving with its own signatures in the history
    (on each route in `signing`: those whose signatures reach this client's history), and another route
    serving while the history carries a signer's — a route of the client's dialect (`native`) and, in a
    pool that has them, a route it is translated for. (The signer is preferred: another serves only when it
    failed, so which others do follows the pool's order.)"""
    routes = {pid: f"{pid}/m1" for pid in fleet.fleet.provider_ids}
    cases: list[tuple[bool, str, bool, bool]] = []  # (streamed, served by, signer served, another served)
    fleet.reset_calls()
    with GatewayServer(cfg) as gw:
        history: list[Any] = []
        for i in range(CALLS):
            if i % TURNS == 0:
                history = []
            turn = run_turn(gw.url, fleet, client, stream=i % 3 == 1, history=history, n=i)
            cases.append((turn.stream, turn.route.split("/")[0], *check_turn(turn, routes)))
            history = [*history, *turn.reply]
    for stream in (False, True):
        assert any(mine for s, _, mine, _ in cases if s == stream), (
            f"stream={stream}: the signer never served"
        )
        assert any(away for s, _, _, away in cases if s == stream), f"stream={stream}: nothing was left out"
    own = {pid for _, pid, mine, _ in cases if mine}
    other = {pid for _, pid, _, away in cases if away}
    assert own == signing, f"the signer served with its own signatures on {own} only"
    if len(native) > 1:
        assert other & native, f"no route of the client's dialect served another's conversation: {other}"
    if set(routes) - native:
        assert other - native, f"no translated route served another's conversation: {other}"


@pytest.fixture
def anthropic_fleet() -> Iterator[FleetThread]:
    spec = FleetSpec(
        [
            _fast("a1", kind="anthropic", faults=[Fault("server_error", status=500, every=4)]),
            _fast("a2", kind="anthropic", faults=[Fault("server_error", status=500, every=7)]),
        ]
    )
    with FleetThread(spec) as ft:
        yield ft


def test_anthropic_signatures_under_round_robin_and_failovers(anthropic_fleet: FleetThread) -> None:
    cfg = base_config(anthropic_fleet, strategy="round-robin", sticky=False, retries_per_route=0)
    _converse(anthropic_fleet, cfg, "anthropic", signing={"a1", "a2"}, native={"a1", "a2"})


@pytest.fixture
def responses_fleet() -> Iterator[FleetThread]:
    spec = FleetSpec(
        [
            _fast("r1", dialects=("responses",), faults=[Fault("server_error", status=500, every=4)]),
            _fast("r2", dialects=("responses",), faults=[Fault("server_error", status=500, every=7)]),
        ]
    )
    with FleetThread(spec) as ft:
        yield ft


def test_responses_encrypted_reasoning_under_round_robin_and_failovers(responses_fleet: FleetThread) -> None:
    cfg = base_config(responses_fleet, strategy="round-robin", sticky=False, retries_per_route=0)
    for p in cfg["providers"]:  # type: ignore[attr-defined]
        p["dialects"] = ["responses"]
    _converse(responses_fleet, cfg, "responses", signing={"r1", "r2"}, native={"r1", "r2"})


@pytest.fixture
def gemini_fleet() -> Iterator[FleetThread]:
    spec = FleetSpec(
        [
            _fast("g1", kind="gemini", faults=[Fault("server_error", status=500, every=4)]),
            _fast("g2", kind="gemini", faults=[Fault("server_error", status=500, every=7)]),
        ]
    )
    with FleetThread(spec) as ft:
        yield ft


def test_gemini_thought_signatures_under_round_robin_and_failovers(gemini_fleet: FleetThread) -> None:
    cfg = base_config(gemini_fleet, strategy="round-robin", sticky=False, retries_per_route=0)
    for p in cfg["providers"]:  # type: ignore[attr-defined]
        p["dialects"] = ["gemini"]
    _converse(gemini_fleet, cfg, "gemini", signing={"g1", "g2"}, native={"g1", "g2"})


@pytest.fixture
def mixed_fleet() -> Iterator[FleetThread]:
    """Two Messages routes, a Responses one and a Gemini one, each signing its own reasoning."""
    spec = FleetSpec(
        [
            _fast("a1", kind="anthropic", faults=[Fault("server_error", status=500, every=5)]),
            _fast("a2", kind="anthropic", faults=[Fault("server_error", status=500, every=6)]),
            _fast(
                "r1", dialects=("openai", "responses"), faults=[Fault("server_error", status=500, every=7)]
            ),
            _fast("g1", kind="gemini", faults=[Fault("server_error", status=500, every=8)]),
        ]
    )
    with FleetThread(spec) as ft:
        yield ft


# Per client in the mixed pool: whose signatures reach its history (README "What each translation keeps": its
# own dialect's routes, and a Messages route's for a Responses client, sealed as `mp1.sig.`; a Responses
# route's encrypted reasoning and a Gemini thought signature have no place in another dialect's reply), and
# the routes that speak its dialect.
MIXED = {
    "anthropic": ({"a1", "a2"}, {"a1", "a2"}),
    "responses": ({"a1", "a2", "r1"}, {"r1"}),
    "gemini": ({"g1"}, {"g1"}),
}


@pytest.mark.parametrize("client", ["anthropic", "responses", "gemini"])
def test_a_pool_of_every_signing_dialect_keeps_each_signature_with_its_signer(
    mixed_fleet: FleetThread, client: str
) -> None:
    """Each client on a pool that mixes Messages, Responses and Gemini routes: native where the route speaks
    its dialect, translated elsewhere; 200 multi-turn calls under round-robin and failovers, no signature
    error, no route ever sent a signature another route made, the signer sent all of its own whenever it is
    tried, and what was left out named for the client."""
    cfg = base_config(mixed_fleet, strategy="round-robin", sticky=False, retries_per_route=0)
    signing, native = MIXED[client]
    _converse(mixed_fleet, cfg, client, signing=signing, native=native)
