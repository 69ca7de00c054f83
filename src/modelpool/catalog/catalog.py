"""The built catalog: pools, routes and client model resolution (SPEC §2).

A `Catalog` is made by `build_catalog` and never changes afterwards; a config or topology change builds
a new one and swaps it in. Everything a request needs is a dict lookup: `resolve` is O(1) for exact
hits, and route verdicts are computed once at build time.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

from modelpool.catalog.filters import glob_match, has_wildcard
from modelpool.catalog.model import Pool, Route
from modelpool.catalog.normalize import normalize_model_id
from modelpool.catalog.status import Status, StatusRules
from modelpool.config.schema import ProviderConfig
from modelpool.offloop import pace


class UnknownModel(LookupError):
    """A client named a model no pool, alias or route answers to (HTTP 404)."""

    def __init__(self, name: str, suggestions: list[str]) -> None:
        self.name = name
        self.suggestions = suggestions
        hint = f"; closest: {', '.join(suggestions)}" if suggestions else ""
        super().__init__(f"unknown model {name!r}{hint}")


class Catalog:
    """Immutable after build. Treat the dicts it hands out as read-only."""

    __slots__ = (
        "_alias_exact",
        "_alias_globs",
        "_member_pool",
        "_non_chat",
        "_pool_lower",
        "_pools",
        "_primary",
        "_providers",
        "_route_pools",
        "_routes",
        "_rules",
        "_status",
        "_warnings",
    )

    def __init__(
        self,
        *,
        pools: dict[str, Pool],
        routes: dict[str, Route],
        providers: dict[str, ProviderConfig],
        primary: dict[str, str],
        non_chat: frozenset[str],
        rules: StatusRules,
        aliases: Mapping[str, str],
        warnings: Iterable[str] = (),
        status: Mapping[str, Status] | None = None,  # the verdicts, when the builder has them already
    ) -> None:
        self._pools = pools
        self._routes = routes
        self._providers = providers
        self._primary = primary  # route key → id of the pool that owns it (natural or merged)
        self._non_chat = non_chat
        self._rules = rules
        self._warnings = tuple(warnings)
        self._status = (
            dict(status)
            if status is not None
            else {k: rules.status(r, non_chat=k in non_chat) for k, r in routes.items()}
        )
        self._pool_lower = {pid.lower(): pid for pid in pools}
        # A merged-away id (`deepseek-flash` inside the `deepseek-v4.1-flash` group) still resolves.
        self._member_pool: dict[str, str] = {}
        for i, (key, pid) in enumerate(primary.items()):
            if not i % 256:
                pace()  # a reload builds in a paced worker (offloop.py): 10,000 routes here
            self._member_pool.setdefault(routes[key].normalized, pid)
        self._alias_exact = {k.lower(): v for k, v in aliases.items() if not has_wildcard(k)}
        self._alias_globs = tuple((k, v) for k, v in aliases.items() if has_wildcard(k))
        self._route_pools: dict[str, Pool] = {}

    # --- read-only views ----------------------------------------------------------------------------

    @property
    def pools(self) -> dict[str, Pool]:
        """Pool id → Pool, in display order."""
        return self._pools

    @property
    def routes(self) -> dict[str, Route]:
        """Route key → Route for every route, twins and non-chat ones included (the roster shows them)."""
        return self._routes

    @property
    def providers(self) -> dict[str, ProviderConfig]:
        """Provider id → config, in config order (providers without models included)."""
        return self._providers

    @property
    def non_chat(self) -> frozenset[str]:
        """Route keys that discovery's non-chat filter denied (kept for the roster, never pooled)."""
        return self._non_chat

    @property
    def warnings(self) -> tuple[str, ...]:
        """Build-time problems worth showing in status (invalid regexes, duplicate group ids)."""
        return self._warnings

    # --- availability ---------------------------------------------------------------------------

    def route_status(self, route: Route | str) -> Status:
        """(candidate, reason) per SPEC §3.1 step 1; see `modelpool.catalog.status` for the rules."""
        key = route if isinstance(route, str) else route.key
        known = self._status.get(key)
        if known is not None:
            return known
        if isinstance(route, str):
            raise KeyError(route)
        return self._rules.status(route, non_chat=False)

    def candidate_routes(self, pool: Pool) -> tuple[Route, ...]:
        """The pool's routes that pass step 1, in the pool's (registration) order."""
        return tuple(r for r in pool.routes if self.route_status(r)[0])

    def pool_of_route(self, route_key: str) -> Pool | None:
        """The pool that owns a route (its natural pool or the merged group), None for unpooled routes."""
        pid = self._primary.get(route_key)
        return self._pools[pid] if pid is not None else None

    # --- client model resolution ----------------------------------------------------------------

    def resolve(self, name: str) -> Pool:
        """Exact pool id → alias → exact route key → normalized match, else `UnknownModel`.

        The pool-id step ignores case, like the alias globs do, so an alias can never shadow a pool
        the client named. An alias whose target resolves to nothing falls through to the later steps
        rather than failing, so a stale alias cannot hide a model the catalog does serve.
        """
        pool = self._pools.get(name)
        if pool is not None:
            return pool
        pid = self._pool_lower.get(name.lower())
        if pid is not None:
            return self._pools[pid]
        target = self._alias_target(name)
        if target is not None:
            pool = self._pools.get(target) or self._route_pool(target) or self._normalized(target)
            if pool is not None:
                return pool
        pool = self._route_pool(name) or self._normalized(name)
        if pool is not None:
            return pool
        raise UnknownModel(name, self.suggest(name))

    def suggest(self, name: str, n: int = 3) -> list[str]:
        """The `n` pool ids closest to `name` (difflib ratio on lowercase ids)."""
        by_lower = self._pool_lower
        matches = difflib.get_close_matches(normalize_model_id(name), list(by_lower), n=n, cutoff=0.0)
        return [by_lower[m] for m in matches]

    def _alias_target(self, name: str) -> str | None:
        # An exact alias key beats any glob; globs are tried in config order, first match wins.
        target = self._alias_exact.get(name.lower())
        if target is not None:
            return target
        for pattern, value in self._alias_globs:
            if glob_match(pattern, name):
                return value
        return None

    def _route_pool(self, key: str) -> Pool | None:
        # A one-route pool, so `x-modelpool-route` (and a client naming a route) gets exactly that route.
        cached = self._route_pools.get(key)
        if cached is not None:
            return cached
        route = self._routes.get(key)
        if route is None:
            return None
        pool = Pool(id=key, name=key, routes=(route,), capabilities=route.capabilities)
        self._route_pools[key] = pool  # benign race: two threads build equal pools
        return pool

    def _normalized(self, name: str) -> Pool | None:
        normalized = normalize_model_id(name)
        pid = self._pool_lower.get(normalized) or self._member_pool.get(normalized)
        return self._pools[pid] if pid is not None else None
