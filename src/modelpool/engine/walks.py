"""The walk that may hedge (SPEC §3.7): built by the engine when `pool.hedge.enabled`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from modelpool.hedge.walk import HedgeParts, HedgingWalker
from modelpool.routing.call import Call
from modelpool.walk.walker import Walker

if TYPE_CHECKING:
    from modelpool.engine.core import Engine


def hedging_walker(gw: Engine, call: Call, plan: Any, on_switch: Any, consent: Any) -> Walker:
    """A walk that starts a second attempt when the first is slow to its first event. Built per call with
    no closure: what every walk shares (`HedgeParts`: the delay's inputs, the budget, the engine's own
    bound methods) is made once per runtime."""
    rt = gw.runtime
    pool_cfg = rt.config.pool
    parts: HedgeParts | None = rt.memo.get("hedge_parts")
    if parts is None:
        parts = rt.memo["hedge_parts"] = HedgeParts(
            pool_cfg.hedge,
            gw.health.ttft_quantile,
            gw.hedge_budget,
            gw.health.record_first_event,
            gw.events.publish,
        )
    gw.hedge_budget.note_call()
    return HedgingWalker(call, plan, pool_cfg, gw.sink, parts, on_switch, consent)
