"""The strategies of SPEC §3.1 step 5, proven through the real server with the `openai` SDK.

Each call carries its own session id and `sticky` is off, so the order seen is the strategy's alone.
The full candidate order of a call is read back from `/admin/sessions/{id}` (the plan and its reasons).
"""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager

import pytest
from routing_helpers import (
    MODEL,
    TOKENS,
    ask,
    client,
    config,
    fleet_of,
    plan_of,
    plan_reasons,
    quick_provider,
)

from gateway_server import GatewayServer
from modelpool.sim import Fault, FleetThread, expected_text

ROUTES = ["alpha/m1", "beta/m1", "gamma/m1"]


def three() -> AbstractContextManager[FleetThread]:
    return fleet_of(quick_provider("alpha"), quick_provider("beta"), quick_provider("gamma"))


def test_round_robin_rotates_the_start_through_the_base_order() -> None:
    with three() as ft, GatewayServer(config(ft, strategy="round-robin", sticky=False)) as gw:
        served = [ask(gw, session=f"s{i}").route for i in range(6)]
        assert served == ROUTES + ROUTES
        # the whole order rotates, not just the head
        assert plan_of(gw, "s4") == ["beta/m1", "gamma/m1", "alpha/m1"]
    with (
        three() as ft,
        GatewayServer(config(ft, strategy="round-robin", sticky=False, provider_order=["gamma"])) as gw,
    ):
        # a partial provider order moves gamma first; the rotation follows that order
        served = [ask(gw, session=f"s{i}").route for i in range(4)]
        assert served == ["gamma/m1", "alpha/m1", "beta/m1", "gamma/m1"]


def test_weighted_random_follows_the_weights_and_never_leads_with_weight_zero() -> None:
    weights = {"alpha": 3, "beta": 1, "gamma": 0}
    with (
        three() as ft,
        GatewayServer(config(ft, strategy="weighted-random", sticky=False, weights=weights)) as gw,
    ):
        sdk = client(gw)
        n = 200
        with ThreadPoolExecutor(8) as pool:
            replies = list(pool.map(lambda i: ask(gw, session=f"w{i}", sdk=sdk), range(n)))
        counts = Counter(r.route for r in replies)
        assert counts["gamma/m1"] == 0
        # expected 150 / 50: bounds are ±4.9 standard deviations, loose enough never to flake
        assert 120 <= counts["alpha/m1"] <= 180, counts
        assert counts["alpha/m1"] + counts["beta/m1"] == n
        for r in replies:
            assert r.text == expected_text(r.route.split("/")[0], MODEL, TOKENS)
        # a zero weight is never drawn: it follows the drawn routes in base order
        for i in range(5):
            assert plan_of(gw, f"w{i}")[-1] == "gamma/m1"


def test_least_used_prefers_the_fewest_served_calls_with_ties_in_base_order() -> None:
    with three() as ft, GatewayServer(config(ft, strategy="least-used", sticky=False)) as gw:
        assert [ask(gw, session=f"s{i}").route for i in range(3)] == ROUTES  # 0/0/0: base order
        for _ in range(2):  # beta serves two extra calls (forced)
            ask(gw, headers={"x-modelpool-route": "beta/m1"})
        ask(gw, session="next")
        # served: alpha 1→ picked (tie 1/1 with gamma settled by base order), gamma 1, beta 3
        assert plan_of(gw, "next") == ["alpha/m1", "gamma/m1", "beta/m1"]
        assert plan_reasons(gw, "next")["beta/m1"][-1] == "served 3 calls"
        ask(gw, session="after")
        assert plan_of(gw, "after") == ["gamma/m1", "alpha/m1", "beta/m1"]


@pytest.mark.parametrize(
    ("order", "expected"),
    [
        ([], ["beta/m1", "gamma/m1", "delta/m1", "alpha/m1"]),
        (["gamma"], ["gamma/m1", "beta/m1", "delta/m1", "alpha/m1"]),
    ],
    ids=["registration-order", "gamma-listed-first"],
)
def test_cheapest_orders_by_cost_hint_ties_by_base_order_unknown_last(
    order: list[str], expected: list[str]
) -> None:
    costs = {"beta": 0.2, "gamma": 0.2, "delta": 0.9}  # alpha declares no cost
    with (
        fleet_of(*(quick_provider(p) for p in ("alpha", "beta", "gamma", "delta"))) as ft,
        GatewayServer(config(ft, strategy="cheapest", sticky=False, costs=costs, provider_order=order)) as gw,
    ):
        reply = ask(gw, session="c1")
        assert reply.route == expected[0]
        assert reply.text == expected_text(expected[0].split("/")[0], MODEL, TOKENS)
        assert plan_of(gw, "c1") == expected
        assert plan_reasons(gw, "c1")["alpha/m1"][-1] == "no cost hint"


def test_fastest_probes_unmeasured_routes_in_base_order_then_prefers_the_lowest_ttft() -> None:
    # time-to-first-chunk 500 ms / 5 ms / 200 ms: the gaps dwarf any scheduling noise
    with (
        fleet_of(
            quick_provider("alpha", ttft=0.5), quick_provider("beta"), quick_provider("gamma", ttft=0.2)
        ) as ft,
        GatewayServer(config(ft, strategy="fastest", sticky=False, provider_order=["gamma"])) as gw,
    ):
        # unmeasured routes go first (each first call is the probe), ties settled by the base order.
        # Streamed: the simulated providers honour their TTFT on streams only.
        probes = [ask(gw, session=f"p{i}", stream=True).route for i in range(3)]
        assert probes == ["gamma/m1", "alpha/m1", "beta/m1"]
        assert plan_reasons(gw, "p0")["gamma/m1"][-1] == "unmeasured: probe"
        for i in range(3):
            assert ask(gw, session=f"f{i}", stream=i == 1).route == "beta/m1"
        assert plan_of(gw, "f2") == ["beta/m1", "gamma/m1", "alpha/m1"]
        assert plan_reasons(gw, "f2")["beta/m1"][-1].startswith("EWMA TTFT")


def test_score_ranks_by_laplace_success_and_speed_and_is_stable_on_ties() -> None:
    with (
        fleet_of(
            quick_provider("alpha", faults=[Fault("server_error", times=1)]),
            quick_provider("beta"),
            quick_provider("gamma"),
        ) as ft,
        # retries 0: alpha's one 500 is believed at once; a 1 ms cooldown keeps the health gate out of it
        GatewayServer(config(ft, strategy="score", sticky=False, retries_per_route=0, cooldown="1ms")) as gw,
    ):
        first = ask(gw, session="s1")
        assert first.route == "beta/m1" and first.headers["x-modelpool-switched"].startswith("alpha/m1")
        # before any call every route scored the same: base order, all "score 0.600"
        # (0.5 × Laplace 1/2 + 0.3 × neutral speed 0.5 + same-model bonus 0.2)
        assert plan_of(gw, "s1") == ROUTES
        assert {why[-1] for why in plan_reasons(gw, "s1").values()} == {"score 0.600"}
        ask(gw, session="s2")
        # beta: 0.5 × 2/3 + 0.3 × (best TTFT / own = 1) + 0.2 = 0.833 (its own TTFT is the best)
        # gamma: 0.5 × 1/2 + 0.3 × 0.5 (unmeasured) + 0.2 = 0.600
        # alpha: 0.5 × 1/3 + 0.3 × 0.5 (no successful sample) + 0.2 = 0.517
        assert plan_of(gw, "s2") == ["beta/m1", "gamma/m1", "alpha/m1"]
        reasons = plan_reasons(gw, "s2")
        assert reasons["beta/m1"][-1].startswith("score 0.833 (1 samples, newest ")
        assert [reasons[r][-1].split(" (")[0] for r in ("beta/m1", "gamma/m1", "alpha/m1")] == [
            "score 0.833",
            "score 0.600",
            "score 0.517",
        ]
