"""Shared builders for the catalog tests: a config from a few dicts, then a catalog from it.

Imported by name (pytest puts this directory on sys.path: the tests tree has no packages)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from modelpool.catalog import Catalog, DiscoveredModel, build_catalog
from modelpool.config.schema import Config

Discovered = Mapping[str, Sequence[DiscoveredModel | str]]


def provider(pid: str, models: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    """A provider dict; `models=None` means discover."""
    body: dict[str, Any] = {"id": pid, "base_url": f"https://{pid}.example.com/v1", **extra}
    if models is not None:
        body["models"] = models
    return body


def discover(raw: Discovered) -> dict[str, list[DiscoveredModel]]:
    return {
        pid: [m if isinstance(m, DiscoveredModel) else DiscoveredModel(m) for m in models]
        for pid, models in raw.items()
    }


def make_config(
    providers: list[dict[str, Any]],
    pool: dict[str, Any] | None = None,
    aliases: dict[str, str] | None = None,
    *,
    default_groups: bool = False,
) -> Config:
    """A validated config; the two shipped groups are left out unless `default_groups` asks for them."""
    pool_body = dict(pool or {})
    if not default_groups:
        pool_body.setdefault("groups", [])
    return Config.model_validate({"providers": providers, "pool": pool_body, "aliases": aliases or {}})


def make_catalog(
    providers: list[dict[str, Any]],
    discovered: Discovered | None = None,
    pool: dict[str, Any] | None = None,
    aliases: dict[str, str] | None = None,
    *,
    default_groups: bool = False,
) -> Catalog:
    """Build a catalog from `make_config(...)` and the discovered lists (plain strings allowed)."""
    config = make_config(providers, pool, aliases, default_groups=default_groups)
    return build_catalog(config, discover(discovered or {}))
