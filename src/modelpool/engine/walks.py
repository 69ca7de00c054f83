"""The walk a call gets (SPEC §3.2): planned, wired to the switch notice and the consent gate (§3.5), and
hedging (§3.7) when `pool.hedge.enabled`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from modelpool.events import EventBus, LastPlans
from modelpool.health.registry import HealthRegistry
from modelpool.hedge.policy import HedgeBudget
from modelpool.hedge.walk import HedgeParts, HedgingWalker
from modelpool.routing.call import Call
from modelpool.routing.planner import Planner
from modelpool.runtime import Runtime
from modelpool.walk.consent import QuestionBoard
from modelpool.walk.walker import Walker
from modelpool.walk.wiring import GatewaySink


class Host(Protocol):
    """What a walk takes from the engine (`engine.core.Engine`)."""

    runtime: Runtime
    planner: Planner
    questions: QuestionBoard
    last_plans: LastPlans
    clock: Callable[[], float]
    health: HealthRegistry
    hedge_budget: HedgeBudget
    events: EventBus
    sink: GatewaySink


def call_walker(gw: Host, call: Call) -> Walker:
    rt = gw.runtime
    plan = gw.planner.plan(rt, call, gw.clock())
    ask = rt.config.pool.confirm_switch == "ask" and not call.purpose and call.forced_route is None

    async def consent(frm: str, to: str, failure: Any) -> bool:
        timeout = gw.runtime.config.pool.confirm_timeout
        message = f"{frm} failed ({failure.kind.value}): switch to {to}?"
        return await gw.questions.ask(
            call.pool.id, call.session_id, frm, to, failure.kind.value, message, timeout
        )

    def on_switch(frm: str, to: str, kind: str) -> None:
        fields: dict[str, Any] = {"pool": call.pool.id, "session": call.session_id, "from": frm, "to": to}
        gw.events.publish("switch", kind=kind, **fields)

    if rt.config.pool.hedge.enabled:
        walker: Walker = hedging_walker(gw, call, plan, on_switch, consent if ask else None)
    else:
        walker = Walker(
            call, plan, rt.config.pool, gw.sink, on_switch=on_switch, consent=consent if ask else None
        )
    walker.state.pricer = rt.prices().pricer(gw.clock())  # SPEC §14: prices at the call's start
    gw.last_plans[call.session_id or ""] = plan
    return walker


def hedging_walker(gw: Host, call: Call, plan: Any, on_switch: Any, consent: Any) -> Walker:
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
