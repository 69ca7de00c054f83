"""Cross-model fallback (`pool.model_fallback`, the rotator's switch to *other models*).

When every route of the pool has failed, the walk may continue on other pools: the same family first
(`deepseek-v4-pro` after `deepseek-v4.1-flash`), then — with `any` — every other pool, each represented
by its best route by the rotator's score.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from modelpool.catalog.model import Pool
from modelpool.catalog.normalize import family
from modelpool.routing.call import Call, Candidate
from modelpool.routing.strategies import StrategyInput, score


def fallback_candidates(
    pools: Iterable[Pool],
    call: Call,
    mode: str,
    room: int,
    healthy_of: Callable[[Pool], Sequence[Candidate]],
    inp: StrategyInput,
) -> list[Candidate]:
    """Other pools' best routes for `call` (`healthy_of` gives a pool's eligible, unrested candidates, as
    the planner's own steps 1-4 see them), same family first, at most `room` of them."""
    if room <= 0:
        return []
    own = family(call.pool.id)
    same: list[Candidate] = []
    other: list[Candidate] = []
    for pool in pools:
        if pool.id == call.pool.id:
            continue
        healthy = healthy_of(pool)
        if not healthy:
            continue
        best = score(healthy, inp)[0][0]
        is_same = family(pool.id) == own
        why = f"model fallback ({'same family' if is_same else 'other model'}: pool {pool.id})"
        (same if is_same else other).append(best.with_reasons(why))  # a copy: `_base` is shared
    ranked = [c for c, _ in score(same, inp)]
    if mode == "any":
        ranked += [c for c, _ in score(other, inp)]
    return ranked[:room]
