"""Reusing the last catalog when nothing it is built from changed (issue #21).

A catalog depends only on the providers, the pool settings, the aliases and the discovered model
lists. The engine rebuilds its runtime for many reasons that touch none of these (start-up builds it
twice: before and after discovery; a timeout, the log level or a dashboard key such as the strategy
changes), and a 10,000-route build costs a few hundred ms. Comparing the inputs costs ~1 ms. When they
did change, the routes of each provider whose own inputs are unchanged are reused (`RouteMemo`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from modelpool.catalog.build import DiscoveredModel, RouteMemo, build_catalog
from modelpool.catalog.catalog import Catalog
from modelpool.config.schema import Config


class CatalogCache:
    """Remembers the last build and its inputs; `build` returns it again while the inputs are equal."""

    def __init__(self) -> None:
        self._inputs: tuple[Any, ...] | None = None
        self._catalog: Catalog | None = None
        self._routes: RouteMemo = {}  # per provider: a changed config rebuilds only what it changed
        self.builds = 0  # how many real builds happened (tests read it)

    def build(self, config: Config, discovered: Mapping[str, Sequence[DiscoveredModel]]) -> Catalog:
        # A snapshot of the discovered lists: discovery replaces them in place on a refresh.
        inputs = (config.providers, config.pool, config.aliases, {k: tuple(v) for k, v in discovered.items()})
        if self._catalog is not None and self._inputs == inputs:
            return self._catalog
        catalog = build_catalog(config, discovered, self._routes)
        self._inputs, self._catalog = inputs, catalog
        self.builds += 1
        return catalog
