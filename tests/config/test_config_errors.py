"""Every error carries the key path a user has to edit."""

from __future__ import annotations

from pathlib import Path

import pytest

from modelpool.config import ConfigError, load_config
from modelpool.config.errors import format_loc


def _errors(source: object, env: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config(source, env=env or {})  # type: ignore[arg-type]
    return info.value.errors


def test_format_loc() -> None:
    assert format_loc(("providers", 0, "base_url")) == "providers[0].base_url"
    assert format_loc(("pool", "strategy")) == "pool.strategy"
    assert format_loc(("aliases", "gpt-4.1")) == 'aliases["gpt-4.1"]'
    assert format_loc(("providers", 0, "model_info", "deepseek-*", "efforts", 1)) == (
        "providers[0].model_info.deepseek-*.efforts[1]"
    )
    assert format_loc(()) == "(root)"


def test_three_mistakes_three_lines(tmp_path: Path) -> None:
    path = tmp_path / "modelpool.yaml"
    path.write_text(
        """
providers:
  - id: a
    base_url: not-a-url
pool:
  strategy: quickest
  retry_backoff: 5 parsecs
""",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    err = info.value
    assert sorted(err.errors) == sorted(
        [
            "providers[0].base_url: base_url must be an http(s) URL, got 'not-a-url'",
            "pool.strategy: Input should be 'priority', 'round-robin', 'weighted-random', 'least-used', "
            "'fastest', 'cheapest', 'throughput' or 'score'",
            "pool.retry_backoff: invalid duration '5 parsecs': use seconds or a string like "
            "'300ms', '60s', '5m', '12h', '1d'",
        ]
    )
    assert err.path == path
    text = str(err)
    assert str(path) in text and "3 errors" in text
    for line in err.errors:
        assert line in text


def test_unknown_keys_suggest_the_close_one() -> None:
    assert sorted(_errors({"pool": {"stratgy": "priority"}, "severs": {}})) == [
        "pool.stratgy: unknown key; did you mean 'strategy'?",
        "severs: unknown key; did you mean 'server'?",
    ]
    assert _errors({"pool": {"zzzz": 1}}) == ["pool.zzzz: unknown key"]


def test_missing_required_key() -> None:
    assert _errors({"providers": [{"id": "a"}]}) == ["providers[0].base_url: required key is missing"]


def test_union_noise_folded_to_one_line() -> None:
    assert _errors({"providers": [{"id": "a", "base_url": "http://x", "cost": "cheap"}]}) == [
        "providers[0].cost: invalid value: expected a number or {peak, off_peak}"
    ]


def test_union_member_error_kept_when_shape_matches() -> None:
    errors = _errors({"pool": {"costs": {"a": {"peak": -1, "off_peak": 1}}}})
    assert errors == ["pool.costs.a.peak: Input should be greater than or equal to 0"]


def test_duplicate_provider_ids_have_a_path() -> None:
    providers = [{"id": "a", "base_url": "http://x"}, {"id": "a", "base_url": "http://y"}]
    assert _errors({"providers": providers}) == ["providers: duplicate provider id 'a'"]


def test_yaml_syntax_error_has_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("pool:\n  strategy: fastest\n   sticky: true\n", encoding="utf-8")
    errors = _errors(path)
    assert len(errors) == 1
    assert errors[0].startswith("line 3, column ")


def test_duplicate_yaml_key_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text("pool:\n  strategy: fastest\n  strategy: priority\n", encoding="utf-8")
    assert _errors(path) == ["line 3, column 3: duplicate key 'strategy'"]


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    path = tmp_path / "list.yaml"
    path.write_text("- a\n- b\n", encoding="utf-8")
    assert _errors(path)[0].startswith("(root): ")


def test_errors_never_echo_a_mistyped_secret() -> None:
    errors = _errors({"providers": [{"id": "a", "base_url": "http://x", "api_key": 123456789}]})
    assert errors == ["providers[0].api_key: Input should be a valid string"]


def test_str_without_path_is_just_the_lines() -> None:
    err = ConfigError(["a: one", "b: two"])
    assert str(err) == "a: one\nb: two"
