"""A hedge that is armed on every call must not make every call garbage for the cycle collector (issue #29).

A racer and its race refer to each other; unless the race lets go of its racers when the route's turn is
over, whatever the race holds — through its `on_win`, the walk, its plan, the call and its parsed body — goes
only when the cycle collector runs. Driven through the library face (`Gateway.chat`) against the simulated
fleet, the hedge armed and never fired; with the collector off, once nothing holds the finished calls (the
session history flushed), a collection must find no race.
"""

from __future__ import annotations

import gc

import uvloop

from modelpool.config import load_config
from modelpool.gateway import Gateway
from modelpool.hedge.race import Race, Racer
from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider
from support import base_config

REQUEST = {"model": "m1", "messages": [{"role": "user", "content": "hello"}]}


async def _races_left(cfg: dict[str, object]) -> tuple[int, list[object]]:
    async with Gateway(load_config(cfg), env={}) as gw:
        for _ in range(3):  # warm: imports, memos, connections
            await gw.chat(REQUEST)
        gc.collect()
        gc.disable()
        try:
            hedged = 0
            for _ in range(5):
                reply = await gw.chat(REQUEST)
                hedged += reply["modelpool"].get("hedged") is None  # armed, never fired
            await gw.history.flush()  # the session history lets go of the finished calls
            gc.set_debug(gc.DEBUG_SAVEALL)
            gc.collect()
            left = [o for o in gc.garbage if isinstance(o, Race | Racer)]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()
    return hedged, left


def test_an_armed_hedge_leaves_no_race_for_the_cycle_collector() -> None:
    spec = FleetSpec([SimProvider(p, models=[SimModel("m1")]) for p in ("alpha", "beta")])
    with FleetThread(spec) as ft:
        cfg = base_config(ft, hedge={"enabled": True, "after": "5s"})  # armed on every call, never fires
        hedged, left = uvloop.run(_races_left(cfg))  # the loop `modelpool serve` runs
    assert hedged == 5
    assert left == []
