"""The walk that may hedge (SPEC §3.7): built by the engine when `pool.hedge.enabled`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from modelpool.routing.call import Call
from modelpool.walk.walker import Walker

if TYPE_CHECKING:
    from modelpool.engine.core import Engine


def hedging_walker(gw: Engine, call: Call, plan: Any, on_switch: Any, consent: Any) -> Walker:
    """A walk that starts a second attempt when the first is slow to its first event."""
    from modelpool.hedge import hedge_delay
    from modelpool.hedge.walk import HedgingWalker

    pool_cfg = gw.runtime.config.pool
    gw.hedge_budget.note_call()

    def on_hedge(outcome: str, loser: str | None, winner: str | None) -> None:
        fields: dict[str, Any] = {"pool": call.pool.id, "session": call.session_id}
        gw.events.publish("hedge", outcome=outcome, loser=loser, winner=winner, **fields)

    return HedgingWalker(
        call,
        plan,
        pool_cfg,
        gw.sink,
        hedge=pool_cfg.hedge,
        delay=lambda key: hedge_delay(gw.runtime.config.pool.hedge, key, gw.health.ttft_quantile),
        budget=gw.hedge_budget,
        measure=gw.health.record_first_event,
        on_hedge=on_hedge,
        on_switch=on_switch,
        consent=consent,
    )
