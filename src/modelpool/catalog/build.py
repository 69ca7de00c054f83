"""Build a `Catalog` from the config and the model lists discovered from providers (SPEC §2).

Runs when the config or a provider's model list changes, never per request. Steps:

1. routes: each provider in config order, its `models` (or, when omitted, its discovered ids); the
   non-chat filter applies to discovered ids only, because a listed id is the user's explicit ask;
2. pools: natural pools by normalized id, then `pool.groups` claim routes first-come;
3. route verdicts (`Catalog.route_status`) are computed once by the `Catalog`.

A reload builds in a paced worker (offloop.py): the loops over routes and pools call `pace()`, so the
event loop gets a turn every fraction of a millisecond.

Every route stays in `Catalog.routes` (the roster shows twins and non-chat rows too), but only
poolable routes join pools: chat routes of ordinary providers, plus twin routes a row entry in
`pool.enabled` switched back on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from modelpool.catalog.catalog import Catalog
from modelpool.catalog.filters import (
    SelectorSet,
    compile_patterns,
    glob_match,
    has_wildcard,
    is_chat_model,
    is_twin_provider,
)
from modelpool.catalog.model import Capabilities, Pool, Route, union_capabilities
from modelpool.catalog.normalize import normalize_model_id
from modelpool.catalog.status import Status, StatusRules
from modelpool.config.schema import EFFORT_TIERS, Config, GroupConfig, ModelInfo, PoolConfig, ProviderConfig
from modelpool.offloop import pace


@dataclass(frozen=True)
class DiscoveredModel:
    """One entry of a provider's model list, with whatever its catalog declares."""

    id: str
    declared_type: str | None = None  # Vercel `type` or an OpenRouter modality such as `text->text`
    capabilities: Capabilities | None = None


# Per provider id: (what its routes were built from, its routes, its non-chat route keys, the switches its
# verdicts were decided with, the verdicts). Kept by the caller between builds (catalog/reuse.py) so a
# reload rebuilds only the providers that changed.
RouteMemo = dict[str, tuple[Any, dict[str, Route], set[str], Any, dict[str, Status]]]
# Registration numbers are `provider index × STRIDE + model index`: only their order matters (base order of
# unlisted providers, pool order), and a provider's numbers then do not move when an earlier provider gains
# or loses a model, so its routes can be reused as they are.
STRIDE = 1 << 32


def build_catalog(
    config: Config, discovered: Mapping[str, Sequence[DiscoveredModel]], memo: RouteMemo | None = None
) -> Catalog:
    """Build the catalog; `discovered` maps provider id → its model list (a missing id means none)."""
    extra, invalid = compile_patterns(config.pool.exclude_patterns)
    warnings = [f"pool.exclude_patterns: invalid regex {p!r} skipped" for p in invalid]
    rules = StatusRules(config.pool)
    # Each route's verdict once, for the pools' capabilities and for the catalog.
    routes, non_chat, status = _collect_routes(config, discovered, extra, rules, {} if memo is None else memo)
    poolable = []
    for r in routes.values():
        pace()
        if r.key not in non_chat and (not r.twin or rules.row_enabled(r)):
            poolable.append(r)
    drafts = _assemble(poolable, config.pool.groups, warnings)
    primary: dict[str, str] = {}
    for d in drafts:
        pace()
        primary.update(dict.fromkeys(d.owns, d.id))
    pools = {d.id: _finish(d, status) for d in drafts}
    return Catalog(
        pools=pools,
        routes=routes,
        providers={p.id: p for p in config.providers},
        primary=primary,
        non_chat=frozenset(non_chat),
        rules=rules,
        aliases=config.aliases,
        warnings=warnings,
        status=status,
    )


# --- routes -------------------------------------------------------------------------------------


def _collect_routes(
    config: Config,
    discovered: Mapping[str, Sequence[DiscoveredModel]],
    extra: Sequence[re.Pattern[str]],
    rules: StatusRules,
    memo: RouteMemo,
) -> tuple[dict[str, Route], set[str], dict[str, Status]]:
    routes: dict[str, Route] = {}
    non_chat: set[str] = set()
    status: dict[str, Status] = {}
    pool = config.pool
    shared_caps: dict[Capabilities, Capabilities] = {}
    # What every provider's routes depend on besides the provider itself; the verdicts also on `rules`.
    common = (tuple(pool.twin_suffixes), tuple(pool.exclude_patterns))
    switches = tuple(tuple(getattr(pool, k)) for k in StatusRules.KEYS)
    for index, provider in enumerate(config.providers):
        pace()
        found = discovered.get(provider.id, ())
        inputs = (provider, tuple(found), index, common)
        kept = memo.get(provider.id)
        if kept is None or kept[0] != inputs:
            built, dropped = _provider_routes(provider, found, pool, extra, index * STRIDE, shared_caps)
            kept = (inputs, built, dropped, None, {})
        if kept[3] != switches:  # new routes, or the switches changed: the verdicts again
            verdicts = {k: rules.status(r, non_chat=k in kept[2]) for k, r in kept[1].items()}
            kept = (inputs, kept[1], kept[2], switches, verdicts)
        memo[provider.id] = kept
        routes.update(kept[1])
        non_chat.update(kept[2])
        status.update(kept[4])
    for gone in memo.keys() - {p.id for p in config.providers}:
        del memo[gone]
    return routes, non_chat, status


def _provider_routes(
    provider: ProviderConfig,
    discovered: Sequence[DiscoveredModel],
    pool: PoolConfig,
    extra: Sequence[re.Pattern[str]],
    start: int,
    shared_caps: dict[Capabilities, Capabilities],
) -> tuple[dict[str, Route], set[str]]:
    routes: dict[str, Route] = {}
    non_chat: set[str] = set()
    found = {m.id: m for m in discovered}
    listed = provider.models is not None
    ids = provider.models if provider.models is not None else list(found)
    twin = is_twin_provider(provider.id, pool.twin_suffixes)
    index = ModelInfoIndex(provider.model_info)
    for model_id in ids:
        pace()
        key = f"{provider.id}/{model_id}"
        if key in routes:
            continue  # a repeated id in a list is one route
        entry = found.get(model_id)
        if not listed and entry is not None and not is_chat_model(model_id, entry.declared_type, extra):
            non_chat.add(key)
        normalized = normalize_model_id(model_id)
        caps = route_capabilities(
            provider, model_id, normalized, entry.capabilities if entry else None, index
        )
        # One object per distinct set of capabilities, not per route: fewer objects for the garbage
        # collector to walk after a reload (a full collection pauses every thread, issue #21).
        caps = shared_caps.setdefault(caps, caps)
        routes[key] = Route(provider.id, model_id, normalized, caps, twin, registration=start + len(routes))
    return routes, non_chat


class ModelInfoIndex:
    """One provider's `model_info` keys, indexed once per catalog build.

    Scanning every key for every model made a build quadratic in a provider's models (200 models with
    200 keys each: 40,000 string compares per provider, issue #21). Exact keys go in a dict; only keys
    with a wildcard are matched one by one, and those are few in practice.
    """

    def __init__(self, model_info: Mapping[str, ModelInfo]) -> None:
        self.exact: dict[str, tuple[int, ModelInfo]] = {}
        self.globs: list[tuple[str, ModelInfo]] = []
        self.keys = list(model_info)
        for position, (key, info) in enumerate(model_info.items()):
            self.exact.setdefault(key.strip().lower(), (position, info))  # first of equal keys wins
            if has_wildcard(key):
                self.globs.append((key, info))

    def lookup(self, model_id: str, normalized: str) -> ModelInfo | None:
        """An exact key (id or normalized id) beats globs; of two exact keys the earlier; first glob wins.
        (A key without a wildcard matches as a glob only where it matches exactly: the dict covers it.)"""
        hits = [hit for hit in (self.exact.get(model_id.lower()), self.exact.get(normalized)) if hit]
        if hits:
            return min(hits, key=lambda hit: hit[0])[1]
        for key, info in self.globs:
            if glob_match(key, model_id) or glob_match(key, normalized):
                return info
        return None

    def matches(self, model_id: str, normalized: str) -> list[tuple[str, ModelInfo]]:
        """Every entry that matches the model, the most specific first (exact keys, earlier first, then
        globs in order), with its key: a route's time limits are merged over all of them key by key, so
        `"*-reasoner": {timeouts: …}` applies beside an exact entry that sets capabilities only."""
        exact = dict(hit for hit in (self.exact.get(model_id.lower()), self.exact.get(normalized)) if hit)
        out = [(self.keys[pos], exact[pos]) for pos in sorted(exact)]
        seen = {key for key, _ in out}
        for key, info in self.globs:
            if key not in seen and (glob_match(key, model_id) or glob_match(key, normalized)):
                out.append((key, info))
        return out


def model_info_for(model_info: Mapping[str, ModelInfo], model_id: str, normalized: str) -> ModelInfo | None:
    """The `model_info` entry for a model: an exact key (id or normalized id) beats globs; first glob wins."""
    return ModelInfoIndex(model_info).lookup(model_id, normalized)


def route_capabilities(
    provider: ProviderConfig,
    model_id: str,
    normalized: str,
    found: Capabilities | None,
    index: ModelInfoIndex | None = None,
) -> Capabilities:
    """Config `model_info` first, then the provider catalog, else unknown, decided field by field.

    Per field, so `model_info: {m: {context_window: 8000}}` corrects one number without discarding the
    efforts and modalities the provider catalog declared. `index`: the provider's `model_info`, indexed
    once for all its models.
    """
    base = found or Capabilities()
    info = (index or ModelInfoIndex(provider.model_info)).lookup(model_id, normalized)
    if info is None:
        return base
    efforts = tuple(t for t in EFFORT_TIERS if t in info.efforts) if info.efforts is not None else None
    modalities = tuple(dict.fromkeys(info.input)) if info.input is not None else None
    return Capabilities(
        context_window=info.context_window if info.context_window is not None else base.context_window,
        efforts=efforts if efforts is not None else base.efforts,
        input_modalities=modalities if modalities is not None else base.input_modalities,
        tools=info.tools if info.tools is not None else base.tools,
    )


# --- pools --------------------------------------------------------------------------------------


@dataclass
class _Draft:
    id: str
    name: str
    routes: list[Route] = field(default_factory=list)
    group: bool = False
    owns: set[str] = field(default_factory=set)  # route keys whose home pool this is (pool_of_route)


def _assemble(poolable: list[Route], groups: Sequence[GroupConfig], warnings: list[str]) -> list[_Draft]:
    """Natural pools and group pools, in display order (where each pool's first route registered)."""
    natural: dict[str, _Draft] = {}
    for route in poolable:
        pace()
        natural.setdefault(route.normalized, _Draft(route.normalized, route.model_id)).routes.append(route)
    group_drafts = _claim(poolable, groups, warnings)
    merged = {key for d in group_drafts.values() for key in d.owns}
    for draft in natural.values():
        pace()
        draft.routes = [r for r in draft.routes if r.key not in merged]
    _absorb_namesakes(natural, group_drafts)
    for draft in natural.values():
        pace()
        draft.owns = {r.key for r in draft.routes}
        if draft.routes:  # named after its first *remaining* route, not one a group took away
            draft.name = draft.routes[0].model_id
    drafts = [d for d in (*natural.values(), *group_drafts.values()) if d.routes]
    for d in drafts:
        pace()
        d.routes.sort(key=lambda r: r.registration)
    # Stable sort: on an equal first route natural pools stay before groups, groups in config order.
    drafts.sort(key=lambda d: d.routes[0].registration)
    return drafts


def _claim(poolable: list[Route], groups: Sequence[GroupConfig], warnings: list[str]) -> dict[str, _Draft]:
    """Group drafts keyed by group id. First-come: a route an earlier group claimed is gone for later ones."""
    claimed: set[str] = set()
    drafts: dict[str, _Draft] = {}
    for group in groups:
        selectors = SelectorSet(group.models)
        taken = []
        for r in poolable:
            pace()
            if r.key not in claimed and selectors.matches(r.key, r.model_id, r.normalized):
                taken.append(r)
        claimed.update(r.key for r in taken)
        draft = drafts.get(group.id)
        if draft is None:
            draft = drafts[group.id] = _Draft(group.id, group.name or group.id, group=True)
        else:
            # A repeated id extends the first group of that id rather than shadowing it.
            warnings.append(f"pool.groups: duplicate group id {group.id!r} merged into the first one")
        draft.routes.extend(taken)
        if group.merge:
            draft.owns.update(r.key for r in taken)
    return drafts


def _absorb_namesakes(natural: dict[str, _Draft], group_drafts: dict[str, _Draft]) -> None:
    """A group whose id equals a natural pool id replaces that pool and takes its remaining routes.

    Pool ids must be unique, and dropping the natural pool's leftovers would make routes vanish, so the
    group absorbs them and becomes their home pool, even with `merge: false`.
    """
    for gid, draft in group_drafts.items():
        namesake = natural.get(gid.lower())
        if namesake is None or not namesake.routes:
            continue
        known = {r.key for r in draft.routes}
        draft.routes.extend(r for r in namesake.routes if r.key not in known)
        draft.owns.update(r.key for r in namesake.routes)
        namesake.routes = []


def _finish(draft: _Draft, status: Mapping[str, tuple[bool, str | None]]) -> Pool:
    pace()
    routes = tuple(draft.routes)
    # Advertise what the pool can actually deliver: a switched-off route's image support is no promise.
    live = [r for r in routes if status[r.key][0]]
    return Pool(draft.id, draft.name, routes, union_capabilities(live or list(routes)), draft.group)
