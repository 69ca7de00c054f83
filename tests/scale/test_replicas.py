"""Two `modelpool serve` processes sharing one Redis behave as one gateway (SPEC §9, issue #7)."""

from __future__ import annotations

import time
from collections.abc import Callable

from modelpool.sim import Fault, FleetThread
from replicas import Replica, wait_for

Start = Callable[..., tuple[Replica, Replica]]
# Sequential turns of one client are this far apart: a conversation's next turn (or the next call of a
# client spread over replicas by a load balancer) comes after the change feed delivered the last one.
TURN_GAP = 0.2


def test_a_quota_rest_found_through_a_keeps_b_off_the_route(replicas: Start, fleet3: FleetThread) -> None:
    a, b = replicas()
    fleet3.set_faults("alpha", [Fault("quota", times=1)])
    assert a.chat() == "beta/m1"  # alpha hit its quota wall, the walk switched
    assert a.route_state("alpha/m1") == "quota"
    wait_for(lambda: b.route_state("alpha/m1") == "quota", what="B learning the rest")
    fleet3.reset_calls()
    for _ in range(3):
        assert b.chat() == "beta/m1"
    assert fleet3.calls("alpha") == []  # B never sent a call to the resting route


def test_a_sticky_session_alternating_between_replicas_stays_on_one_route(replicas: Start) -> None:
    # Round-robin would move every new call to the next route; the pin must hold across replicas.
    a, b = replicas(strategy="round-robin", sticky=True)
    served = []
    for turn in range(6):
        served.append((a if turn % 2 == 0 else b).chat(session="conv-1", text=f"turn {turn}"))
        time.sleep(TURN_GAP)
    assert len(set(served)) == 1, served
    # Other conversations still rotate: the pin is per session, not a lock on the pool.
    others = {(a if i % 2 else b).chat(session=f"other-{i}") for i in range(3)}
    assert len(others) > 1


def test_round_robin_rotates_globally_across_replicas(replicas: Start) -> None:
    a, b = replicas(strategy="round-robin", sticky=False)
    served = []
    for i in range(9):
        served.append((a if i % 2 == 0 else b).chat(text=f"call {i}"))
        time.sleep(TURN_GAP)
    # Alternating A, B, A, B … walks the routes in order, as one gateway would: three full turns.
    # (With cursors per process, A and B would each restart the rotation: alpha, alpha, beta, beta …)
    order = ["alpha/m1", "beta/m1", "gamma/m1"]
    start = order.index(served[0])
    assert served == [order[(start + i) % 3] for i in range(9)], served


def test_a_dashboard_setting_and_a_roster_switch_made_on_a_apply_on_b(replicas: Start) -> None:
    a, b = replicas()
    assert b.chat() == "alpha/m1"
    a.admin("PATCH", "/admin/settings", {"pool.max_attempts": 2})
    a.admin("POST", "/admin/models", {"key": "alpha/m1", "enabled": False, "scope": "model"})

    def b_settings() -> dict[str, object]:
        rows = b.admin("GET", "/admin/settings")["settings"]
        return {r["key"]: (r["value"], r["layer"]) for r in rows}

    wait_for(lambda: b_settings().get("pool.max_attempts") == (2, "dashboard"), what="setting on B")
    wait_for(lambda: b.route_state("alpha/m1") == "off", what="roster switch on B")
    assert b.chat() == "beta/m1"
    # And back on, from B this time.
    b.admin("POST", "/admin/models", {"key": "alpha/m1", "enabled": True, "scope": "model"})
    wait_for(lambda: a.route_state("alpha/m1") != "off", what="switch back on A")
    assert a.chat(text="a new conversation") == "alpha/m1"  # the last one is pinned to beta
