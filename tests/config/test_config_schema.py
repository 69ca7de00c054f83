"""Value parsing in the schema: durations, sizes, and YAML 1.1's reading of bare `off`."""

from __future__ import annotations

import pytest
import yaml

from modelpool.config import Config, ConfigError, load_config, parse_duration, parse_size


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [
        ("300ms", 0.3),
        ("60s", 60.0),
        ("5m", 300.0),
        ("12h", 43200.0),
        ("1d", 86400.0),
        (5, 5.0),
        ("1.5h", 5400.0),
    ],
)
def test_parse_duration(raw: object, seconds: float) -> None:
    assert parse_duration(raw) == pytest.approx(seconds)


@pytest.mark.parametrize("raw", ["5 parsecs", "-1s", "", True, -3, None, "h"])
def test_parse_duration_rejects(raw: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(raw)


@pytest.mark.parametrize(
    ("raw", "size"),
    [("32MiB", 32 * 1024**2), ("512KiB", 512 * 1024), ("1mb", 1_000_000), (1024, 1024), ("10", 10)],
)
def test_parse_size(raw: object, size: int) -> None:
    assert parse_size(raw) == size


@pytest.mark.parametrize("raw", ["lots", "-1MiB", False, -5])
def test_parse_size_rejects(raw: object) -> None:
    with pytest.raises(ValueError):
        parse_size(raw)


def test_durations_in_config_become_seconds() -> None:
    cfg = load_config({"pool": {"retry_backoff": "300ms", "quota_cooldown": "12h"}}, env={}).config
    assert cfg.pool.retry_backoff == pytest.approx(0.3)
    assert cfg.pool.quota_cooldown == 43200.0


def test_quota_cooldown_ceiling_is_26h() -> None:
    with pytest.raises(ConfigError) as info:
        load_config({"pool": {"quota_cooldown": "27h"}}, env={})
    assert info.value.errors == ["pool.quota_cooldown: quota_cooldown may not exceed 26h"]


def _from_yaml(text: str) -> Config:
    return load_config(yaml.safe_load(text), env={}).config


def test_yaml_off_values() -> None:
    cfg = _from_yaml(
        """
pool: {confirm_switch: off, model_fallback: off}
holidays: {source: off, sync: off}
providers:
  - id: d
    base_url: https://api.deepseek.com
    model_info: {"deepseek-*": {efforts: [off, high, max]}}
"""
    )
    assert cfg.pool.confirm_switch == "off"
    assert cfg.pool.model_fallback == "off"
    assert cfg.holidays.source == "off"
    assert cfg.holidays.sync is False
    assert cfg.providers[0].model_info["deepseek-*"].efforts == ["off", "high", "max"]


def test_yaml_on_is_not_a_valid_mode() -> None:
    # `on` reads as True; it is not a value of these enums, so it must fail rather than mean "ask".
    with pytest.raises(ConfigError) as info:
        _from_yaml("pool: {confirm_switch: on}")
    assert info.value.errors[0].startswith("pool.confirm_switch: ")


def test_unquoted_yaml_dates() -> None:
    cfg = _from_yaml("peak: {makeup_workdays: [2025-09-28]}\nholidays: {override: [2025-10-01]}")
    assert cfg.peak.makeup_workdays == ["2025-09-28"]
    assert cfg.holidays.override == ["2025-10-01"]


def test_sample_config_from_spec_validates() -> None:
    cfg = _from_yaml(
        """
server: {host: 127.0.0.1, port: 4000, api_keys: [], admin_token: "", max_body: 32MiB}
state:
  {backend: sqlite, path: ~/.local/state/modelpool/state.db,
   redis_url: redis://127.0.0.1:6379/0, persist_ttl: 24h}
providers:
  - id: deepseek
    kind: openai
    name: DeepSeek
    base_url: https://api.deepseek.com
    api_key_env: DEEPSEEK_API_KEY
    models: [deepseek-flash, deepseek-v4-pro]
    model_info:
      deepseek-*: {context_window: 1000000, efforts: [off, high, max], input: [text], tools: true}
    weight: 3
    cost: 0.4
    cache_lifetime: 1h
  - {id: vercel, kind: vercel, base_url: https://ai-gateway.vercel.sh, api_key_env: AI_GATEWAY_API_KEY,
     models: [deepseek/deepseek-v4.1-flash-1017], cost: {peak: 0.8, off_peak: 0.4}}
aliases: {"claude-opus*": deepseek-v4-pro, "claude-*": deepseek-v4.1-flash}
pool:
  strategy: fastest
  retry_backoff: 300ms
  max_cooldown: 30m
  confirm_timeout: 20s
  provider_order: [deepseek, vercel]
peak: {windows: ["09:00-12:00", "14:00-24:00"], weekdays: [1, 2, 3, 4, 5]}
gateway_ranking: {enabled: true, stats_ttl: 15m, min_uptime: 90}
"""
    )
    assert cfg.server.admin_token is None
    assert cfg.providers[0].cache_lifetime == 3600.0
    assert cfg.provider("vercel") is not None
    assert cfg.gateway_ranking.stats_ttl == 900.0


def test_empty_inline_api_key_means_none() -> None:
    cfg = load_config({"providers": [{"id": "a", "base_url": "http://x", "api_key": ""}]}, env={}).config
    assert cfg.providers[0].api_key is None


def test_unset_client_key_is_not_an_empty_valid_key() -> None:
    cfg = load_config({"server": {"api_keys": ["${CLIENT_KEY}", "k2"]}}, env={}).config
    assert cfg.server.api_keys == ["k2"]


def test_duplicate_group_ids_rejected() -> None:
    groups = [{"id": "g", "models": ["a"]}, {"id": "g", "models": ["b"]}]
    with pytest.raises(ConfigError) as info:
        load_config({"pool": {"groups": groups}}, env={})
    assert info.value.errors == ["pool.groups: duplicate group id 'g'"]
