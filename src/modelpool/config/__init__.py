"""Configuration: schema, loading, layers and live reload (SPEC §1.5)."""

from modelpool.config.errors import ConfigError
from modelpool.config.layers import (
    DASHBOARD_KEYS,
    EffectiveSetting,
    FileLayer,
    apply_layers,
    apply_layers_lenient,
    effective_settings,
    merge_dashboard,
    validate_dashboard_patch,
)
from modelpool.config.loader import (
    LoadedConfig,
    find_config_path,
    load_config,
    resolve_api_key,
    state_db_path,
    state_dir,
)
from modelpool.config.schema import Config, parse_duration, parse_size
from modelpool.config.watch import ConfigWatcher

__all__ = [
    "DASHBOARD_KEYS",
    "Config",
    "ConfigError",
    "ConfigWatcher",
    "EffectiveSetting",
    "FileLayer",
    "LoadedConfig",
    "apply_layers",
    "apply_layers_lenient",
    "effective_settings",
    "find_config_path",
    "load_config",
    "merge_dashboard",
    "parse_duration",
    "parse_size",
    "resolve_api_key",
    "state_db_path",
    "state_dir",
    "validate_dashboard_patch",
]
