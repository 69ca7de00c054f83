"""A pool's context windows as a client must size to them (SPEC §1.7): the routes a call may reach.

A call may be served by any route of its pool and — with `pool.model_fallback` — by the pools of its
fallback chain (`same-family`: the pools of its family; `any`: every pool). An agent CLI must compact
before the *smallest* of those windows; a request is too long for the pool only when it is over the
*largest* (the planner demotes the routes it does not fit). A route with no known window makes the largest
unknown (it may hold anything), so such a pool never refuses a request for its size.
"""

from __future__ import annotations

from dataclasses import dataclass

from modelpool.catalog.model import Pool, Route
from modelpool.catalog.normalize import family
from modelpool.routing.call import Call
from modelpool.runtime import Runtime


@dataclass(frozen=True, slots=True)
class Windows:
    smallest: int | None  # None: no route of the chain declares a window
    largest: int | None  # None: some route's window is unknown (no upper bound)


def reachable_routes(rt: Runtime, pool: Pool) -> list[Route]:
    """The pool's routes, then its fallback chain's (as `routing.fallback` walks it)."""
    cfg = rt.config.pool
    routes = list(pool.routes)
    if cfg.model_fallback == "off" or not cfg.fallback:
        return routes
    own = family(pool.id)
    for other in rt.catalog.pools.values():
        if other.id != pool.id and (cfg.model_fallback == "any" or family(other.id) == own):
            routes += other.routes
    return routes


def pool_windows(rt: Runtime, pool: Pool) -> Windows:
    """Memoised per runtime snapshot: one dict lookup on the request path."""
    key = ("windows", pool.id)
    found: Windows | None = rt.memo.get(key)
    if found is None:
        sizes = [r.capabilities.context_window for r in reachable_routes(rt, pool)]
        known = [s for s in sizes if s]
        largest = max(known) if known and len(known) == len(sizes) else None
        found = rt.memo[key] = Windows(min(known) if known else None, largest)
    return found


def route_window(rt: Runtime, route_key: str) -> Windows:
    """A forced route (`x-modelpool-route`): its own window only."""
    route = rt.catalog.routes.get(route_key)
    size = route.capabilities.context_window if route is not None else None
    return Windows(size, size)


# How far over the largest window an estimate must be before modelpool refuses a request itself. The
# estimate (protocols/tokens.py) counts ~4 characters a token; real tokenizers take up to ~6 for common
# English words (llama.cpp counts "word " × 3000 as 3,031 tokens, the estimate says 3,754), fewer for code
# and CJK text. Refusing only at 1.5 × the largest window means a request that fits is never refused; one
# in between goes upstream, and the upstream's own overflow error reaches the client in the same words.
OVERFLOW_MARGIN = 1.5


def overflow(rt: Runtime, call: Call) -> tuple[int, int] | None:
    """(estimated tokens, largest window) when the call is too long for every route it may reach."""
    found = route_window(rt, call.forced_route) if call.forced_route else pool_windows(rt, call.pool)
    if found.largest is None:
        return None
    tokens = call.est_tokens
    return (tokens, found.largest) if tokens > found.largest * OVERFLOW_MARGIN else None
