"""defaults < file < dashboard, the in-force listing and its redaction."""

from __future__ import annotations

import json
from typing import Any

import pytest

from modelpool.config import (
    DASHBOARD_KEYS,
    ConfigError,
    apply_layers,
    apply_layers_lenient,
    effective_settings,
    load_config,
    merge_dashboard,
    validate_dashboard_patch,
)

FILE: dict[str, Any] = {
    "server": {"admin_token": "adm-secret", "api_keys": ["client-secret"]},
    "state": {"redis_url": "redis://:redis-secret@cache:6379/0"},
    "providers": [
        {
            "id": "a",
            "base_url": "https://a.example",
            "api_key": "sk-secret-a",
            "headers": {"Authorization": "Bearer hdr-secret"},
        },
        {"id": "b", "base_url": "https://b.example", "api_key_env": "B_KEY"},
    ],
    "pool": {"strategy": "cheapest", "provider_order": ["a", "b"], "score_weights": {"speed": 0.9}},
}


def test_precedence() -> None:
    cfg = apply_layers(FILE, {"pool.strategy": "priority", "pool.max_attempts": 2})
    assert cfg.pool.strategy == "priority"  # dashboard over file
    assert cfg.pool.max_attempts == 2  # dashboard over default
    assert cfg.pool.provider_order == ["a", "b"]  # file over default
    assert cfg.pool.sticky is True  # default
    assert cfg.pool.score_weights.speed == 0.9 and cfg.pool.score_weights.connectivity == 0.5


def test_dashboard_owns_only_its_keys() -> None:
    dashboard = {"pool.provider_order": ["b", "a"]}
    edited = {**FILE, "pool": {**FILE["pool"], "strategy": "score"}}
    cfg = apply_layers(edited, dashboard)
    assert cfg.pool.strategy == "score"  # a later file edit of another key still applies
    assert cfg.pool.provider_order == ["b", "a"]


def test_none_in_dashboard_means_unset() -> None:
    assert apply_layers(FILE, {"pool.strategy": None}).pool.strategy == "cheapest"


def test_inputs_not_mutated() -> None:
    before = json.dumps(FILE, sort_keys=True)
    apply_layers(FILE, {"pool.score_weights.connectivity": 0.1, "peak.windows": ["10:00-11:00"]})
    assert json.dumps(FILE, sort_keys=True) == before


def test_bad_dashboard_value_names_dashboard_key() -> None:
    with pytest.raises(ConfigError) as info:
        apply_layers(FILE, {"pool.strategy": "fastest-ever", "pool.max_attempts": 99})
    assert sorted(info.value.errors) == [
        "[dashboard] pool.max_attempts: Input should be less than or equal to 8",
        "[dashboard] pool.strategy: Input should be 'priority', 'round-robin', 'weighted-random', "
        "'least-used', 'fastest', 'cheapest', 'throughput' or 'score'",
    ]


def test_dashboard_cannot_set_file_only_keys() -> None:
    with pytest.raises(ConfigError) as info:
        apply_layers(FILE, {"server.admin_token": "x"})
    assert info.value.errors == ["[dashboard] server.admin_token: not a setting the dashboard may change"]


def test_dashboard_keys() -> None:
    assert {
        "pool.strategy",
        "pool.groups",
        "pool.provider_order",
        "pool.score_weights.speed",
    } <= DASHBOARD_KEYS
    assert {
        "peak.enabled",
        "peak.peak_provider_order",
        "holidays.sync",
        "holidays.override",
    } <= DASHBOARD_KEYS
    assert {"gateway_ranking.min_uptime", "gateway_ranking.enabled"} <= DASHBOARD_KEYS
    assert not {k for k in DASHBOARD_KEYS if k.split(".")[0] in ("server", "state", "providers", "timeouts")}
    assert "holidays.url_template" not in DASHBOARD_KEYS


def test_lenient_drops_only_the_bad_dashboard_keys() -> None:
    cfg, warnings = apply_layers_lenient(
        FILE, {"pool.strategy": "nonsense", "pool.max_attempts": 3, "server.port": 1}
    )
    assert cfg.pool.strategy == "cheapest"
    assert cfg.pool.max_attempts == 3
    assert len(warnings) == 2
    assert all(w.startswith("[dashboard] ") and w.endswith("ignored") for w in warnings)


def test_validate_dashboard_patch() -> None:
    patch = validate_dashboard_patch(
        {"pool.score_weights": {"speed": 1.0}, "holidays.sync": False, "peak.enabled": None}
    )
    assert patch == {"pool.score_weights.speed": 1.0, "holidays.sync": False, "peak.enabled": None}
    with pytest.raises(ConfigError) as info:
        validate_dashboard_patch({"pool.nope": 1, "providers": []})
    assert sorted(info.value.errors) == [
        "[dashboard] pool.nope: not a setting the dashboard may change",
        "[dashboard] providers: not a setting the dashboard may change",
    ]
    with pytest.raises(ConfigError) as info:
        validate_dashboard_patch({"pool.exclude_patterns": ["ok", "(bad"], "pool.confirm_timeout": "1h"})
    assert len(info.value.errors) == 2
    assert info.value.errors[0].startswith("[dashboard] pool.exclude_patterns[1]: invalid regex")
    assert (
        info.value.errors[1] == "[dashboard] pool.confirm_timeout: confirm_timeout must be between 1s and 10m"
    )


def test_merge_dashboard() -> None:
    current = {"pool.strategy": "priority", "pool.sticky": False}
    assert merge_dashboard(current, {"pool.strategy": None, "pool.fallback": False}) == {
        "pool.sticky": False,
        "pool.fallback": False,
    }
    assert current == {"pool.strategy": "priority", "pool.sticky": False}


def test_effective_settings_layers() -> None:
    settings = {s.key: s for s in effective_settings(FILE, {"pool.provider_order": ["b", "a"]})}
    assert settings["pool.provider_order"].layer == "dashboard"
    assert settings["pool.provider_order"].value == ["b", "a"]
    assert settings["pool.strategy"].layer == "file"
    assert settings["pool.strategy"].value == "cheapest"
    assert settings["pool.score_weights.speed"].layer == "file"
    assert settings["pool.score_weights.connectivity"].layer == "default"
    assert settings["pool.sticky"].layer == "default"
    assert settings["providers"].layer == "file"
    assert settings["pool.retry_backoff"].value == 0.3
    assert "pool.score_weights" not in settings  # sections are not leaves; lists and dicts are
    assert "pool.groups" in settings and "aliases" in settings


def test_effective_settings_never_contain_secrets() -> None:
    settings = effective_settings(FILE, {})
    dumped = json.dumps([(s.key, s.value, s.layer) for s in settings])
    for secret in ("adm-secret", "client-secret", "sk-secret-a", "redis-secret", "hdr-secret"):
        assert secret not in dumped
    by_key = {s.key: s.value for s in settings}
    assert by_key["server.admin_token"] == "***"
    assert by_key["server.api_keys"] == ["***"]
    assert by_key["state.redis_url"] == "redis://:***@cache:6379/0"
    provider_a = by_key["providers"][0]
    assert provider_a["api_key"] == "***" and provider_a["headers"] == {"Authorization": "***"}
    assert by_key["providers"][1]["api_key"] is None
    assert by_key["providers"][1]["api_key_env"] == "B_KEY"  # the variable's name is not a secret


def test_unset_secrets_stay_visible_as_unset() -> None:
    by_key = {s.key: s.value for s in effective_settings({}, {})}
    assert by_key["server.admin_token"] is None
    assert by_key["server.api_keys"] == []


def test_loaded_config_helpers_include_auto_detected_providers(tmp_path: Any, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    loaded = load_config(None, env={"HOME": str(tmp_path), "DEEPSEEK_API_KEY": "sk-live"})
    cfg = loaded.with_dashboard({"pool.strategy": "priority"})
    assert [p.id for p in cfg.providers] == ["deepseek"]
    assert cfg.pool.strategy == "priority"
    # Callers that pass the file layer themselves get the detected providers too.
    assert [p.id for p in apply_layers(loaded.file_layer, {"pool.sticky": False}).providers] == ["deepseek"]
    settings = {s.key: s for s in effective_settings(loaded.file_layer, {})}
    assert settings["providers"].layer == "default"
    assert settings["providers"].value[0]["id"] == "deepseek"
    assert "sk-live" not in json.dumps(settings["providers"].value)


def test_lenient_still_raises_on_file_errors() -> None:
    with pytest.raises(ConfigError) as info:
        apply_layers_lenient({"pool": {"strategy": "bad"}}, {"pool.max_attempts": 3})
    assert info.value.errors[0].startswith("pool.strategy: ")


def test_effective_settings_skip_invalid_dashboard_keys() -> None:
    settings = {s.key: s for s in effective_settings(FILE, {"pool.strategy": "bad", "pool.sticky": False})}
    assert settings["pool.strategy"].layer == "file" and settings["pool.strategy"].value == "cheapest"
    assert settings["pool.sticky"].layer == "dashboard" and settings["pool.sticky"].value is False
