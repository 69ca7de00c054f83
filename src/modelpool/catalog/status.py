"""Why a route is or is not a candidate: SPEC §3.1 step 1, with the rotator's roster precedence.

Reasons, checked in this order (the first that applies is reported, so a structural reason that no
switch can lift is never hidden behind a switchable one):

- `excluded`     the provider is in `pool.exclude`, or the route matches `pool.exclude_models`;
- `provider`     `pool.include` is non-empty and does not list the provider;
- `non-chat`     discovery's non-chat filter denied the model;
- `switched-off` a roster switch: the row (`pool.disabled`) or the channel (`pool.disabled_providers`);
- `twin`         the provider is a twin (`pool.twin_suffixes`).

Only the last two are switches, and between them the rotator seed's four rules decide:

1. a row entry in `pool.enabled` (route key) outranks the channel rule: a closed channel can still
   put one model back;
2. a row entry in `pool.disabled` outranks the channel's open state;
3. the twin default is lifted only by a row entry in `pool.enabled`, never by the channel flag (a
   twin channel has no channel switch, so `disabled_providers` neither opens nor matters for it);
4. a row-level statement beats a blanket one: `enabled: [p/m]` wins over `disabled: [m]` (a bare id or
   glob that covers every channel), while the same route key in both lists counts as disabled (the
   admin API keeps the two lists exclusive, so that state only comes from hand edits).
"""

from __future__ import annotations

from modelpool.catalog.filters import SelectorSet, glob_match, has_wildcard
from modelpool.catalog.model import Route
from modelpool.config.schema import PoolConfig

EXCLUDED = "excluded"
PROVIDER = "provider"
NON_CHAT = "non-chat"
SWITCHED_OFF = "switched-off"
TWIN = "twin"

Status = tuple[bool, str | None]
CANDIDATE: Status = (True, None)


def _any_glob(patterns: tuple[str, ...], value: str) -> bool:
    return any(glob_match(p, value) for p in patterns)


class StatusRules:
    """`PoolConfig`'s availability keys, pre-digested so each verdict is a few set lookups."""

    __slots__ = (
        "_disabled",
        "_disabled_exact",
        "_disabled_providers",
        "_enabled",
        "_exclude",
        "_exclude_models",
        "_include",
    )

    # The `PoolConfig` keys the verdicts depend on (a catalog build reuses verdicts while they are equal).
    KEYS = ("include", "exclude", "exclude_models", "disabled", "enabled", "disabled_providers")

    def __init__(self, pool: PoolConfig) -> None:
        self._include = tuple(pool.include)
        self._exclude = tuple(pool.exclude)
        self._exclude_models = SelectorSet(pool.exclude_models)  # compiled once: read for every route
        self._disabled = SelectorSet(pool.disabled)
        # Exact route keys in `disabled` are row-level statements (rule 4); globs and bare ids are not.
        self._disabled_exact = frozenset(d.strip().lower() for d in pool.disabled if not has_wildcard(d))
        self._enabled = frozenset(e.strip().lower() for e in pool.enabled)
        self._disabled_providers = tuple(pool.disabled_providers)

    def row_enabled(self, route: Route) -> bool:
        """True when `pool.enabled` switches this exact route on (the only way to lift the twin rule)."""
        return route.key.lower() in self._enabled

    def status(self, route: Route, *, non_chat: bool = False) -> Status:
        """(candidate, reason); reason is None exactly when candidate is True."""
        if _any_glob(self._exclude, route.provider_id) or self._matches(self._exclude_models, route):
            return False, EXCLUDED
        if self._include and not _any_glob(self._include, route.provider_id):
            return False, PROVIDER
        if non_chat:
            return False, NON_CHAT
        return self._switch_status(route)

    def _switch_status(self, route: Route) -> Status:
        key = route.key.lower()
        if key in self._disabled_exact:
            return False, SWITCHED_OFF
        if key in self._enabled:
            return CANDIDATE
        if self._matches(self._disabled, route):
            return False, SWITCHED_OFF
        if route.twin:
            return False, TWIN
        if _any_glob(self._disabled_providers, route.provider_id):
            return False, SWITCHED_OFF
        return CANDIDATE

    @staticmethod
    def _matches(selectors: SelectorSet, route: Route) -> bool:
        return bool(selectors) and selectors.matches(route.key, route.model_id, route.normalized)
