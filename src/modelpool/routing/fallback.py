"""Cross-model fallback (`pool.model_fallback`, the rotator's switch to *other models*).

When every route of the pool has failed, the walk may continue on other pools: the same family first
(`deepseek-v4-pro` after `deepseek-v4.1-flash`), then — with `any` — every other pool, each represented
by its best route by the rotator's score.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from modelpool.catalog.normalize import family
from modelpool.routing.call import Call, Candidate
from modelpool.routing.strategies import score
from modelpool.runtime import Runtime

if TYPE_CHECKING:
    from modelpool.routing.planner import Planner


def fallback_candidates(
    planner: Planner, rt: Runtime, call: Call, mode: str, room: int, now: float
) -> list[Candidate]:
    if room <= 0:
        return []
    own = family(call.pool.id)
    same: list[Candidate] = []
    other: list[Candidate] = []
    for pool in rt.catalog.pools.values():
        if pool.id == call.pool.id:
            continue
        eligible, _ = planner._base(rt, pool, now)
        healthy = [c for c in eligible if not planner._is_resting(c.key, now)]
        if not healthy:
            continue
        best = score(healthy, planner._strategy_input(rt, call))[0][0]
        is_same = family(pool.id) == own
        why = f"model fallback ({'same family' if is_same else 'other model'}: pool {pool.id})"
        (same if is_same else other).append(best.with_reasons(why))  # a copy: `_base` is shared
    inp = planner._strategy_input(rt, call)
    ranked = [c for c, _ in score(same, inp)]
    if mode == "any":
        ranked += [c for c, _ in score(other, inp)]
    return ranked[:room]
