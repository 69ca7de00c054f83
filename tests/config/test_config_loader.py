"""Finding and loading the config file, warnings, keys and the state directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from modelpool.config import ConfigError, find_config_path, load_config, resolve_api_key, state_dir
from modelpool.config.loader import read_yaml, state_db_path
from modelpool.config.schema import ProviderConfig

PROVIDER_YAML = """
providers:
  - id: deepseek
    base_url: https://api.deepseek.com
    api_key_env: DEEPSEEK_API_KEY
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working directory and home, so no real config of the machine is found."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    home = tmp_path / "home"
    home.mkdir()
    return home


def _write(path: Path, text: str = "pool: {strategy: priority}\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_find_order(home: Path, tmp_path: Path) -> None:
    env = {"HOME": str(home)}
    assert find_config_path(None, env) is None

    user = _write(home / ".config" / "modelpool" / "modelpool.yaml")
    assert find_config_path(None, env) == user

    xdg = _write(tmp_path / "xdg" / "modelpool" / "modelpool.yaml")
    assert find_config_path(None, {**env, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}) == xdg

    local = _write(Path.cwd() / "modelpool.yaml")
    assert find_config_path(None, env) == local

    from_env = _write(tmp_path / "env.yaml")
    env["MODELPOOL_CONFIG"] = str(from_env)
    assert find_config_path(None, env) == from_env

    flag = _write(tmp_path / "flag.yaml")
    assert find_config_path(flag, env) == flag
    assert find_config_path(str(flag), env) == flag


def test_explicit_missing_path_is_an_error(home: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        find_config_path(tmp_path / "nope.yaml", {"HOME": str(home)})
    with pytest.raises(ConfigError, match="does not exist"):
        find_config_path(None, {"HOME": str(home), "MODELPOOL_CONFIG": str(tmp_path / "nope.yaml")})
    with pytest.raises(ConfigError, match="is not a file"):
        find_config_path(tmp_path, {"HOME": str(home)})


def test_tilde_expands_against_env_home(home: Path) -> None:
    cfg = _write(home / "cfg" / "m.yaml")
    assert find_config_path("~/cfg/m.yaml", {"HOME": str(home)}) == cfg


def test_no_file_auto_detects(home: Path) -> None:
    loaded = load_config(None, env={"HOME": str(home), "DEEPSEEK_API_KEY": "sk-x"})
    assert loaded.path is None
    assert [p.id for p in loaded.config.providers] == ["deepseek"]
    # The detected providers travel in the file layer, marked as not set by a file.
    assert [p["id"] for p in loaded.file_layer["providers"]] == ["deepseek"]
    assert loaded.file_layer.auto_keys == {"providers"}
    assert loaded.config.providers[0].cache_lifetime == 3600.0
    assert loaded.warnings == []


def test_no_file_no_keys_is_valid_with_a_hint(home: Path) -> None:
    loaded = load_config(None, env={"HOME": str(home)})
    assert loaded.config.providers == []
    assert len(loaded.warnings) == 1 and "DEEPSEEK_API_KEY" in loaded.warnings[0]


def test_file_without_providers_still_auto_detects(home: Path) -> None:
    path = _write(Path.cwd() / "modelpool.yaml", "pool: {strategy: priority}\n")
    loaded = load_config(None, env={"HOME": str(home), "OPENAI_API_KEY": "sk"})
    assert loaded.path == path
    assert [p.id for p in loaded.config.providers] == ["openai"]
    assert loaded.config.pool.strategy == "priority"


def test_file_providers_replace_auto_detection(home: Path) -> None:
    path = _write(home / "m.yaml", PROVIDER_YAML)
    loaded = load_config(path, env={"HOME": str(home), "OPENAI_API_KEY": "sk", "DEEPSEEK_API_KEY": "d"})
    assert [p.id for p in loaded.config.providers] == ["deepseek"]
    assert loaded.file_layer.auto_keys == frozenset()


def test_dict_source_is_taken_as_is(home: Path) -> None:
    loaded = load_config({"pool": {"strategy": "cheapest"}}, env={"DEEPSEEK_API_KEY": "sk"})
    assert loaded.path is None
    assert loaded.config.providers == []
    assert loaded.config.pool.strategy == "cheapest"


def test_env_substitution_and_warnings(home: Path) -> None:
    text = PROVIDER_YAML + "server: {admin_token: '${MODELPOOL_ADMIN_TOKEN}', port: '${PORT:-4100}'}\n"
    text += "pool: {exclude_patterns: ['embed', '(unclosed']}\n"
    loaded = load_config(_write(home / "m.yaml", text), env={"HOME": str(home)})
    cfg = loaded.config
    assert cfg.server.admin_token is None
    assert cfg.server.port == 4100
    assert loaded.file_layer["server"] == {"admin_token": "", "port": "4100"}
    assert cfg.pool.exclude_patterns == ["embed"]  # the bad regex is skipped, not fatal
    assert len(loaded.warnings) == 3
    missing, key, regex = loaded.warnings
    assert "MODELPOOL_ADMIN_TOKEN" in missing
    assert key.startswith("providers[0] (deepseek): DEEPSEEK_API_KEY is empty or not set")
    assert regex.startswith("pool.exclude_patterns[1]: invalid regex '(unclosed'")


def test_empty_file_and_empty_sections(home: Path) -> None:
    assert load_config(_write(home / "e.yaml", ""), env={}).config.pool.strategy == "fastest"
    loaded = load_config(_write(home / "s.yaml", "pool:\nserver:\n"), env={})
    assert loaded.config.pool.strategy == "fastest"
    assert loaded.file_layer == {"providers": []}  # empty sections dropped; nothing detected


def test_validation_error_names_the_file(home: Path) -> None:
    path = _write(home / "m.yaml", "pool: {strategy: nope}\n")
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert info.value.path == path
    assert info.value.errors[0].startswith("pool.strategy: ")


def test_resolve_api_key() -> None:
    inline = ProviderConfig(id="a", base_url="http://x", api_key="sk-inline", api_key_env="K")
    assert resolve_api_key(inline, {"K": "sk-env"}) == "sk-inline"
    from_env = ProviderConfig(id="a", base_url="http://x", api_key_env="K")
    assert resolve_api_key(from_env, {"K": "sk-env"}) == "sk-env"
    assert resolve_api_key(from_env, {"K": ""}) is None
    assert resolve_api_key(ProviderConfig(id="a", base_url="http://x"), {}) is None


def test_state_dir_override_and_defaults(home: Path, tmp_path: Path) -> None:
    cfg = load_config({"state": {"path": str(tmp_path / "s" / "db.sqlite")}}, env={}).config
    assert state_dir(cfg, {"HOME": str(home)}) == tmp_path / "s"
    assert (tmp_path / "s").is_dir()
    assert state_db_path(cfg, {"HOME": str(home)}) == tmp_path / "s" / "db.sqlite"

    override = tmp_path / "override"
    env = {"HOME": str(home), "MODELPOOL_STATE_DIR": str(override)}
    assert state_dir(cfg, env) == override
    assert state_db_path(cfg, env) == override / "db.sqlite"
    assert (os.stat(override).st_mode & 0o777) == 0o700

    memory = load_config({"state": {"backend": "memory"}}, env={}).config
    assert state_dir(memory, {"HOME": str(home)}) == home / ".local" / "state" / "modelpool"
    assert state_dir(memory, {"HOME": str(home), "XDG_STATE_HOME": str(tmp_path / "xs")}) == (
        tmp_path / "xs" / "modelpool"
    )
    default = load_config({}, env={}).config
    assert state_dir(default, {"HOME": str(home)}) == home / ".local" / "state" / "modelpool"


def test_the_paced_loader_reads_what_pyyaml_reads(tmp_path: Path) -> None:
    """The loader takes its node tree apart after constructing (issue #29: freed a few nodes at a time):
    anchors, aliases, merge keys and nesting still read exactly as PyYAML's own safe loader reads them."""
    text = (
        "base: &base {timeout: 30, tags: [a, b]}\n"
        "providers:\n"
        "  - {<<: *base, id: one, models: [m1, m2]}\n"
        "  - <<: *base\n"
        "    id: two\n"
        "    nested: {deep: [[1, 2], {x: *base}]}\n"
        "again: *base\n"
    )
    path = tmp_path / "modelpool.yaml"
    path.write_text(text)
    assert read_yaml(path) == yaml.safe_load(text)
