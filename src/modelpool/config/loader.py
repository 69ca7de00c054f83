"""Finding, reading and validating `modelpool.yaml` (SPEC §1.5), and where state lives.

A load either returns a fully valid `Config` or raises one `ConfigError` listing every problem;
things that are suspicious but workable (an unset variable, a provider without a key, a bad exclude
regex) become warnings so the gateway still starts.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from modelpool.config.env import detect_providers, known_key_vars, substitute_env
from modelpool.config.errors import ConfigError
from modelpool.config.layers import EffectiveSetting, FileLayer, apply_layers, effective_settings
from modelpool.config.schema import Config, ProviderConfig
from modelpool.offloop import pace

CONFIG_NAME = "modelpool.yaml"
DEFAULT_STATE_SUBDIR = Path(".local/state/modelpool")


@dataclass
class LoadedConfig:
    config: Config  # defaults < file, no dashboard layer yet
    path: Path | None  # None: no file (auto-detected providers) or a dict source
    # The file's dict after ${ENV} substitution: which keys the file set. When the file names no
    # providers, the auto-detected ones are in it too (listed in `file_layer.auto_keys`).
    file_layer: FileLayer
    warnings: list[str] = field(default_factory=list)

    def with_dashboard(self, dashboard: Mapping[str, Any]) -> Config:
        """The config in force once the dashboard layer is on top (raises ConfigError)."""
        return apply_layers(self.file_layer, dashboard)

    def effective_settings(self, dashboard: Mapping[str, Any] | None = None) -> list[EffectiveSetting]:
        return effective_settings(self.file_layer, dashboard or {})


def _env(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def _home(env: Mapping[str, str]) -> Path:
    home = env.get("HOME")
    return Path(home) if home else Path.home()


def expand_path(path: str | Path, env: Mapping[str, str] | None = None) -> Path:
    """`~/x` against `$HOME` of the given environment (so tests can point HOME elsewhere)."""
    text = str(path)
    if text == "~" or text.startswith("~/"):
        return _home(_env(env)) / text[2:]
    return Path(text).expanduser()


def find_config_path(explicit: str | Path | None = None, env: Mapping[str, str] | None = None) -> Path | None:
    """`--config`, else `$MODELPOOL_CONFIG`, else `./modelpool.yaml`, else the user config dir, else None.

    A path the user named (flag or variable) that does not exist is an error rather than a silent
    fall-through to auto-detection, which would start a gateway with a config nobody wrote.
    """
    env = _env(env)
    named = explicit if explicit not in (None, "") else env.get("MODELPOOL_CONFIG") or None
    if named is not None:
        path = expand_path(named, env)
        if not path.is_file():
            what = "does not exist" if not path.exists() else "is not a file"
            raise ConfigError(f"config: {path} {what}", path=path)
        return path
    local = Path.cwd() / CONFIG_NAME
    if local.is_file():
        return local
    config_home = env.get("XDG_CONFIG_HOME") or str(_home(env) / ".config")
    user = Path(config_home) / "modelpool" / CONFIG_NAME
    return user if user.is_file() else None


# libyaml's parser when PyYAML was built with it (the wheels are): a 10,000-route config is ~20 s with the
# pure-Python scanner and about 1 s with the C one (issue #21). Same safe constructor either way.
_SafeBase: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _UniqueKeyLoader(_SafeBase):  # type: ignore[misc,valid-type]
    """SafeLoader that rejects a key repeated in one mapping (PyYAML silently keeps the last).

    It also `pace()`s per node, composing and constructing: a 10,000-route file is ~11,000 nodes and
    ~30 ms of CPU, which a reload spreads over turns of the event loop (offloop.py)."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:  # libyaml's composer calls it per node
        pace()
        return super().resolve(kind, value, implicit)

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        pace()
        return super().construct_object(node, deep=deep)

    def construct_document(self, node: yaml.Node) -> Any:
        data = super().construct_document(node)
        _dismantle(node)
        return data

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(key_node, yaml.ScalarNode):
                continue
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _dismantle(root: yaml.Node) -> None:
    """Free the node tree a few nodes at a time: left to reference counting it goes in one cascade once
    the load returns (~11,000 nodes with two marks each for 10,000 routes, ~2 ms in one go on the loop)."""
    stack = [root]
    while stack:
        pace()
        node = stack.pop()
        if isinstance(node.value, list):
            for child in node.value:  # a sequence's nodes, a mapping's (key, value) pairs
                if isinstance(child, tuple):
                    stack.extend(child)
                else:
                    stack.append(child)
            node.value = []


def read_yaml(path: Path) -> dict[str, Any]:
    """The file's top-level mapping; an empty file is `{}`. Any problem is a ConfigError."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config: {path} does not exist", path=path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config: cannot read {path}: {exc}", path=path) from None
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.YAMLError as exc:
        raise ConfigError.from_yaml(exc, path=path) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(
            "(root): the config file must be a mapping of keys (server:, providers:, pool: …)", path=path
        )
    return data


def load_config(
    source: str | Path | Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
) -> LoadedConfig:
    """Load and validate defaults < file. `source`: a path, a dict, or None to search (find_config_path)."""
    env = _env(env)
    if isinstance(source, Mapping):
        # A dict is exactly the config the caller means: no auto-detection behind its back.
        return _load_dict(dict(source), None, env, auto_detect=False)
    path = find_config_path(source, env)
    if path is None:
        return _load_dict({}, None, env, auto_detect=True)
    return _load_dict(read_yaml(path), path, env, auto_detect=True)


def _load_dict(
    raw: dict[str, Any], path: Path | None, env: Mapping[str, str], *, auto_detect: bool
) -> LoadedConfig:
    substituted, missing = substitute_env(raw, env)
    file_layer = FileLayer({k: v for k, v in substituted.items() if v is not None})
    # No providers named (no file, or a file that only tunes behaviour): use the env's keys (SPEC §1.5).
    if auto_detect and "providers" not in file_layer:
        file_layer["providers"] = detect_providers(env)
        file_layer.auto_keys = frozenset({"providers"})
    try:
        config = apply_layers(file_layer, {})
    except ConfigError as err:
        raise err.with_path(path) from None
    warnings = [
        f"environment variable {name} is not set; ${{{name}}} became an empty string" for name in missing
    ]
    warnings += _provider_key_warnings(config, env, file_layer)
    warnings += _regex_warnings(file_layer)
    return LoadedConfig(config, path, file_layer, warnings)


def _provider_key_warnings(config: Config, env: Mapping[str, str], file_layer: FileLayer) -> list[str]:
    if not config.providers:
        hint = ", ".join(known_key_vars()[:6])
        where = "auto-detected" if "providers" in file_layer.auto_keys else "configured"
        return [
            f"providers: none {where}; set a provider key ({hint}, …) or list providers in modelpool.yaml"
        ]
    return [
        f"providers[{i}] ({p.id}): {p.api_key_env} is empty or not set; calls to it will fail authentication"
        for i, p in enumerate(config.providers)
        if not p.api_key and p.api_key_env and not env.get(p.api_key_env)
    ]


def _regex_warnings(file_layer: Mapping[str, Any]) -> list[str]:
    pool = file_layer.get("pool")
    patterns = pool.get("exclude_patterns") if isinstance(pool, Mapping) else None
    warnings = []
    for i, pattern in enumerate(patterns if isinstance(patterns, list) else []):
        try:
            re.compile(str(pattern))
        except re.error as exc:
            warnings.append(f"pool.exclude_patterns[{i}]: invalid regex {pattern!r} ({exc}); skipped")
    return warnings


def resolve_api_key(provider: ProviderConfig, env: Mapping[str, str] | None = None) -> str | None:
    """The provider's key: inline `api_key`, else the value of `api_key_env`, else None. Never log it."""
    if provider.api_key:
        return provider.api_key
    if provider.api_key_env:
        return _env(env).get(provider.api_key_env) or None
    return None


def default_state_home(env: Mapping[str, str] | None = None) -> Path:
    env = _env(env)
    xdg = env.get("XDG_STATE_HOME")
    return Path(xdg) / "modelpool" if xdg else _home(env) / DEFAULT_STATE_SUBDIR


def state_dir(config: Config, env: Mapping[str, str] | None = None) -> Path:
    """The directory for state (sqlite db, admin token, holiday cache), created 0700 on demand.

    `$MODELPOOL_STATE_DIR` wins over everything (tests and containers set it); otherwise the directory
    of `state.path`, or for the memory backend, which has no path, the user state dir.
    """
    env = _env(env)
    override = env.get("MODELPOOL_STATE_DIR")
    if override:
        directory = expand_path(override, env)
    elif config.state.backend == "memory":
        directory = default_state_home(env)
    else:
        directory = expand_path(config.state.path, env).parent
    # 0700: the admin token lives here.
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    return directory


def state_db_path(config: Config, env: Mapping[str, str] | None = None) -> Path:
    """The sqlite file: `state.path`, moved into `$MODELPOOL_STATE_DIR` when that is set."""
    env = _env(env)
    if env.get("MODELPOOL_STATE_DIR"):
        return state_dir(config, env) / Path(config.state.path).name
    state_dir(config, env)
    return expand_path(config.state.path, env)
