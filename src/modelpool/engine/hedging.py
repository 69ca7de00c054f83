"""The walk that may hedge (SPEC §3.7): built by the engine when `pool.hedge.enabled`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from modelpool.hedge.walk import HedgingWalker
from modelpool.routing.call import Call
from modelpool.walk.walker import Walker

if TYPE_CHECKING:
    from modelpool.engine.core import Engine


def hedging_walker(gw: Engine, call: Call, plan: Any, on_switch: Any, consent: Any) -> Walker:
    """A walk that starts a second attempt when the first is slow to its first event. Built per call with
    no closure: the walker reads the delay and reports a hedge through the engine's own bound methods."""
    pool_cfg = gw.runtime.config.pool
    gw.hedge_budget.note_call()
    return HedgingWalker(
        call,
        plan,
        pool_cfg,
        gw.sink,
        hedge=pool_cfg.hedge,
        quantile=gw.health.ttft_quantile,
        budget=gw.hedge_budget,
        measure=gw.health.record_first_event,
        on_hedge=gw.events.publish,
        on_switch=on_switch,
        consent=consent,
    )
