"""Configuration layers: defaults < file < dashboard (SPEC §1.5).

The dashboard layer is a flat dict of dotted keys (`{"pool.strategy": "priority"}`) kept by the state
backend; it owns only the keys it sets, so a file edit to any other key still applies live. Everything
that leaves this module for display is redacted (SPEC §12): provider keys, client keys and the admin
token never appear.
"""

from __future__ import annotations

import copy
import re
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Union, get_origin
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ValidationError

from modelpool.config.errors import ConfigError, validation_lines
from modelpool.config.schema import Config
from modelpool.offloop import pace

Layer = Literal["default", "file", "dashboard"]
REDACTED = "***"
DASHBOARD_PREFIX = "[dashboard] "


class FileLayer(dict[str, Any]):
    """The file's dict (after `${ENV}` substitution), plus what auto-detection filled in for it.

    Auto-detected providers travel inside the file layer so every caller of `apply_layers(file_layer,
    dashboard)` gets them; `auto_keys` names those top-level keys so listings still call them defaults.
    """

    def __init__(
        self, data: Mapping[str, Any] | None = None, auto_keys: frozenset[str] = frozenset()
    ) -> None:
        super().__init__(data or {})
        self.auto_keys = auto_keys


@dataclass(frozen=True, slots=True)
class EffectiveSetting:
    key: str  # dotted, e.g. "pool.strategy"
    value: Any  # JSON-ready and redacted
    layer: Layer


def _model_type(annotation: Any) -> type[BaseModel] | None:
    """The model class behind a field annotation, if the field is a nested section."""
    if get_origin(annotation) in (Union, types.UnionType):
        return None
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def leaf_keys(model: type[BaseModel] = Config, prefix: str = "") -> list[str]:
    """Dotted keys of every leaf setting; lists and dicts are leaves, nested sections are not."""
    keys: list[str] = []
    for name, field in model.model_fields.items():
        sub = _model_type(field.annotation)
        key = f"{prefix}{name}"
        keys.extend(leaf_keys(sub, f"{key}.") if sub is not None else [key])
    return keys


LEAF_KEYS: tuple[str, ...] = tuple(leaf_keys())
# Behaviour knobs the Settings page may own. Server, state, timeouts and providers stay file-only:
# they hold secrets or need a restart, and the dashboard must never store a provider key.
DASHBOARD_KEYS: frozenset[str] = frozenset(
    k
    for k in LEAF_KEYS
    if k.startswith(("pool.", "peak.", "gateway_ranking.")) or k in ("holidays.sync", "holidays.override")
)


def _set_dotted(target: dict[str, Any], key: str, value: Any) -> None:
    *parents, last = key.split(".")
    node = target
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[last] = value


def _get_dotted(source: Mapping[str, Any], key: str) -> tuple[bool, Any]:
    node: Any = source
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _copy_tree(value: Any) -> Any:
    """A copy of the dicts and lists of a parsed config (scalars are immutable and shared).

    `copy.deepcopy` spent ~0.25 s on a 10,000-route file keeping a memo no YAML tree needs (issue #21)."""
    if isinstance(value, dict):
        pace()  # a reload's copy is paced (offloop.py)
        return {k: _copy_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        pace()
        return [_copy_tree(v) for v in value]
    if isinstance(value, (str, int, float, bool, type(None))):
        return value
    return copy.deepcopy(value)  # anything else (a YAML date, a caller's object): the careful way


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """Deep merge of mappings; lists and scalars in `over` replace."""
    out: dict[str, Any] = _copy_tree(dict(base))
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = _copy_tree(value)
    return out


def merged_layers(file_dict: Mapping[str, Any], dashboard: Mapping[str, Any]) -> dict[str, Any]:
    """The raw dict defaults < file < dashboard, before validation."""
    unknown = sorted(k for k in dashboard if k not in DASHBOARD_KEYS)
    if unknown:
        raise ConfigError([f"{DASHBOARD_PREFIX}{k}: not a setting the dashboard may change" for k in unknown])
    # A top-level section left empty in YAML (`pool:` with every line commented out) reads as None.
    merged = _merge({}, {k: v for k, v in file_dict.items() if v is not None})
    for key, value in dashboard.items():
        if value is not None:  # None means "not set by the dashboard"
            _set_dotted(merged, key, copy.deepcopy(value))
    return merged


def _owns(key: str, path: str) -> bool:
    return path == key or path.startswith((f"{key}.", f"{key}["))


def _label(path: str, dashboard: Mapping[str, Any]) -> str:
    owned = any(_owns(k, path) for k, v in dashboard.items() if v is not None)
    return DASHBOARD_PREFIX + path if owned else path


def _validate(merged: dict[str, Any]) -> tuple[Config | None, list[tuple[str, str]]]:
    try:
        return Config.model_validate(merged), []
    except ValidationError as exc:
        return None, validation_lines(exc)


def apply_layers(file_dict: Mapping[str, Any], dashboard: Mapping[str, Any]) -> Config:
    """Validate defaults < file < dashboard. Errors caused by a dashboard key are led by `[dashboard] `."""
    config, problems = _validate(merged_layers(file_dict, dashboard))
    if config is None:
        raise ConfigError([f"{_label(path, dashboard)}: {msg}" for path, msg in problems])
    return config


def apply_layers_lenient(
    file_dict: Mapping[str, Any], dashboard: Mapping[str, Any]
) -> tuple[Config, list[str]]:
    """Like apply_layers, but a dashboard key that no longer validates (stale state, schema change)
    is dropped with a warning instead of taking the gateway down. File errors still raise."""
    config, warnings, _kept = _apply_lenient(file_dict, dashboard)
    return config, warnings


def _apply_lenient(
    file_dict: Mapping[str, Any], dashboard: Mapping[str, Any]
) -> tuple[Config, list[str], dict[str, Any]]:
    kept = {k: v for k, v in dashboard.items() if k in DASHBOARD_KEYS and v is not None}
    warnings = [
        f"{DASHBOARD_PREFIX}{k}: not a dashboard setting; ignored"
        for k in dashboard
        if k not in DASHBOARD_KEYS
    ]
    while True:  # each round drops at least one key, so this ends
        config, problems = _validate(merged_layers(file_dict, kept))
        if config is not None:
            return config, warnings, kept
        bad = {k for k in kept for path, _ in problems if _owns(k, path)}
        if not bad:
            raise ConfigError([f"{path}: {msg}" for path, msg in problems])
        warnings += [
            f"{DASHBOARD_PREFIX}{path}: {msg}; ignored"
            for path, msg in problems
            if any(_owns(k, path) for k in bad)
        ]
        kept = {k: v for k, v in kept.items() if k not in bad}


def _flatten_patch(patch: Mapping[str, Any]) -> dict[str, Any]:
    """Expand a section value (`{"pool.score_weights": {"speed": 1}}`) into its leaf keys."""
    flat: dict[str, Any] = {}
    for key, value in patch.items():
        if (
            key not in DASHBOARD_KEYS
            and isinstance(value, Mapping)
            and any(k.startswith(f"{key}.") for k in DASHBOARD_KEYS)
        ):
            flat.update(_flatten_patch({f"{key}.{k}": v for k, v in value.items()}))
        else:
            flat[key] = value
    return flat


def validate_dashboard_patch(patch: Mapping[str, Any]) -> dict[str, Any]:
    """Check a Settings-page patch: known keys, valid values. Returns it flattened to leaf keys.

    A None value means "remove this key from the dashboard layer" and is passed through.
    """
    flat = _flatten_patch(patch)
    errors = [
        f"{DASHBOARD_PREFIX}{k}: not a setting the dashboard may change"
        for k in flat
        if k not in DASHBOARD_KEYS
    ]
    if errors:
        raise ConfigError(errors)
    errors.extend(_regex_errors(flat.get("pool.exclude_patterns")))
    try:
        apply_layers({}, flat)
    except ConfigError as err:
        errors.extend(err.errors)
    if errors:
        raise ConfigError(errors)
    return flat


def _regex_errors(patterns: Any) -> list[str]:
    # The file may carry a bad pattern (skipped with a warning); the dashboard can be told right away.
    errors: list[str] = []
    for i, pattern in enumerate(patterns if isinstance(patterns, list) else []):
        try:
            re.compile(str(pattern))
        except re.error as exc:
            errors.append(f"{DASHBOARD_PREFIX}pool.exclude_patterns[{i}]: invalid regex: {exc}")
    return errors


def merge_dashboard(current: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """The dashboard layer after a (validated) patch: None deletes a key, anything else sets it."""
    out = dict(current)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def effective_settings(file_dict: Mapping[str, Any], dashboard: Mapping[str, Any]) -> list[EffectiveSetting]:
    """Every leaf setting in force, its redacted value and the layer it came from (`status`).

    Dashboard keys that do not validate are not in force (the gateway drops them the same way), so
    they are listed at the layer that actually applies.
    """
    config, _warnings, in_force = _apply_lenient(file_dict, dashboard)
    dumped = config.model_dump(mode="json")
    out: list[EffectiveSetting] = []
    for key in LEAF_KEYS:
        _, value = _get_dotted(dumped, key)
        out.append(EffectiveSetting(key, redact_setting(key, value), _layer_of(key, file_dict, in_force)))
    return out


def _layer_of(key: str, file_dict: Mapping[str, Any], dashboard: Mapping[str, Any]) -> Layer:
    if dashboard.get(key) is not None:
        return "dashboard"
    if key.split(".")[0] in getattr(file_dict, "auto_keys", ()):
        return "default"
    found, value = _get_dotted(file_dict, key)
    return "file" if found and value is not None else "default"


def redact_setting(key: str, value: Any) -> Any:
    """A setting's value as it may be shown: secrets become "***", URL passwords are masked."""
    if key in ("server.admin_token", "metrics.token"):
        return REDACTED if value else value
    if key == "server.api_keys":
        return [REDACTED for _ in value or []]
    if key == "state.redis_url":
        return redact_url(value)
    if key == "providers":
        return [redact_provider(p) for p in value or []]
    return value


def redact_provider(provider: Mapping[str, Any]) -> dict[str, Any]:
    """A provider dict without its key. Header values are masked too: they often carry tokens."""
    out = dict(provider)
    if out.get("api_key"):
        out["api_key"] = REDACTED
    if out.get("headers"):
        out["headers"] = dict.fromkeys(out["headers"], REDACTED)
    if isinstance(out.get("base_url"), str):
        out["base_url"] = redact_url(out["base_url"])
    return out


def redact_url(url: Any) -> Any:
    """`redis://user:secret@host/0` → `redis://user:***@host/0`."""
    if not isinstance(url, str) or "@" not in url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return REDACTED
    if parts.password is None and parts.username is None:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    # With a password, the user name is not secret; a lone user part (`https://TOKEN@host`) often is.
    user = f"{parts.username or ''}:{REDACTED}" if parts.password is not None else REDACTED
    return urlunsplit(parts._replace(netloc=f"{user}@{host}"))


__all__ = [
    "DASHBOARD_KEYS",
    "LEAF_KEYS",
    "EffectiveSetting",
    "apply_layers",
    "apply_layers_lenient",
    "effective_settings",
    "merge_dashboard",
    "redact_provider",
    "redact_setting",
    "redact_url",
    "validate_dashboard_patch",
]
