"""The planner keeps a deterministic strategy's ranking on the runtime between calls. It must never outlive
its inputs: a recorded result, a published prior or the period changes the very next plan.

In-process (no server): the planner is pure, and these are properties of consecutive plans. Also here:
the weighted draw's shortcut for equal weights draws what the general draw does.
"""

from __future__ import annotations

import random
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from modelpool.gateway import Gateway
from modelpool.routing.measurements import RegistryMeasurements
from modelpool.routing.planner import Planner
from modelpool.routing.strategies import weighted_random

ROUTES = ["alpha/m1", "beta/m1", "gamma/m1"]
BODY = {"model": "m1", "messages": [{"role": "user", "content": "hello"}]}
PEAK = datetime(2026, 3, 10, 10, tzinfo=ZoneInfo("Asia/Shanghai")).timestamp()  # a Tuesday, 10:00
OFF_PEAK = datetime(2026, 3, 10, 20, tzinfo=ZoneInfo("Asia/Shanghai")).timestamp()


def gateway(strategy: str, costs: dict[str, Any] | None = None) -> Gateway:
    providers = [
        {
            "id": pid,
            "base_url": f"http://127.0.0.1:9/{pid}/v1",  # never called
            "models": ["m1"],
            **({"cost": costs[pid]} if costs else {}),
        }
        for pid in ("alpha", "beta", "gamma")
    ]
    return Gateway.from_config(
        {
            "providers": providers,
            "pool": {"strategy": strategy, "sticky": False},
            "state": {"backend": "memory"},
            "holidays": {"sync": False},
        }
    )


def plan(gw: Gateway, planner: Planner | None = None, now: float = OFF_PEAK) -> list[tuple[str, str]]:
    """(route, the strategy's reason) in plan order."""
    call = gw.prepare("openai", BODY, {})
    made = (planner or gw.planner).plan(gw.runtime, call, now)
    return [(c.key, made.reasons(c)[-1]) for c in made.candidates]


def test_a_recorded_result_changes_the_next_plan() -> None:
    gw = gateway("least-used")
    assert plan(gw) == [(r, "served 0 calls") for r in ROUTES]
    assert plan(gw) == [(r, "served 0 calls") for r in ROUTES]  # unchanged: the same ranking again
    gw.health.record_success("alpha/m1")
    assert plan(gw) == [
        ("beta/m1", "served 0 calls"),
        ("gamma/m1", "served 0 calls"),
        ("alpha/m1", "served 1 calls"),
    ]


def test_speeds_rerank_after_each_sample() -> None:
    gw = gateway("throughput")
    for key, tps in zip(ROUTES, (100, 50, 10), strict=True):
        gw.health.record_success(key, tokens_per_s=tps)
    assert [key for key, _ in plan(gw)] == ROUTES
    gw.health.record_success("beta/m1", tokens_per_s=400)
    gw.health.record_success("beta/m1", tokens_per_s=400)  # beta's median: 400
    # each reason names the estimate and how many own samples it rests on, and how old the newest is
    assert [(key, why.split(" (")[0]) for key, why in plan(gw)] == [
        ("beta/m1", "400 tok/s"),
        ("alpha/m1", "100 tok/s"),
        ("gamma/m1", "10 tok/s"),
    ]
    assert plan(gw)[0][1].startswith("400 tok/s (3 samples, newest ")


def test_a_ranking_that_read_published_stats_is_not_kept() -> None:
    # Published stats (an aggregator's) change on their own, without a recorded result.
    gw = gateway("fastest")
    published = {"alpha/m1": 0.5, "beta/m1": 0.2, "gamma/m1": 0.3}
    planner = Planner(
        RegistryMeasurements(gw.health), gw.health.is_resting, prior_ttft=lambda c: published[c.key]
    )
    assert [key for key, _ in plan(gw, planner)] == ["beta/m1", "gamma/m1", "alpha/m1"]
    published["alpha/m1"] = 0.1
    assert plan(gw, planner)[0] == ("alpha/m1", "published TTFT 100 ms")


def test_cheapest_follows_the_period() -> None:
    costs = {"alpha": {"peak": 3, "off_peak": 1}, "beta": {"peak": 1, "off_peak": 3}, "gamma": 2}
    gw = gateway("cheapest", costs)
    assert [key for key, _ in plan(gw, now=OFF_PEAK)] == ["alpha/m1", "gamma/m1", "beta/m1"]
    assert plan(gw, now=PEAK) == [("beta/m1", "cost 1"), ("gamma/m1", "cost 2"), ("alpha/m1", "cost 3")]
    assert plan(gw, now=OFF_PEAK)[0] == ("alpha/m1", "cost 1")


def test_the_uniform_weighted_draw_is_the_running_sum_draw() -> None:
    # Every weight 1 takes a shortcut (no running sums); weight 2 takes the general draw, whose sums are
    # exact doubles of the same ones: the same seed must give the same order.
    gw = gateway("weighted-random")
    base, _ = gw.planner._base(gw.runtime, gw.runtime.catalog.pools["m1"], OFF_PEAK)
    cands = base * 8  # 24 draws per plan (the keys repeat, which the draw does not look at)
    for seed in range(200):
        orders = []
        for weight in (1.0, 2.0):
            inp = gw.planner._strategy_input(gw.runtime, gw.prepare("openai", BODY, {}))
            inp.weights, inp.rng = dict.fromkeys(ROUTES, weight), random.Random(seed)
            orders.append([c.key for c, _ in weighted_random(cands, inp)])
        assert orders[0] == orders[1]
