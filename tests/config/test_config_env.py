"""`${ENV}` substitution and provider auto-detection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from modelpool.config import load_config
from modelpool.config.env import KNOWN_PROVIDERS, detect_providers, substitute_env


def test_substitution_recursive_with_defaults_and_missing() -> None:
    raw: dict[str, Any] = {
        "server": {"admin_token": "${TOKEN}", "port": "${PORT:-4000}"},
        "providers": [{"base_url": "https://${HOST}/v1", "headers": {"X": "a${NOPE}b"}}],
        "n": 3,
        "flag": True,
    }
    env = {"TOKEN": "t0k", "HOST": "api.example.com"}
    out, missing = substitute_env(raw, env)
    assert out == {
        "server": {"admin_token": "t0k", "port": "4000"},
        "providers": [{"base_url": "https://api.example.com/v1", "headers": {"X": "ab"}}],
        "n": 3,
        "flag": True,
    }
    assert missing == ["NOPE"]
    assert raw["server"]["admin_token"] == "${TOKEN}"  # input untouched


def test_default_applies_to_empty_values_too() -> None:
    out, missing = substitute_env("${A:-x}|${B:-}|${C}", {"A": "", "C": ""})
    assert out == "x||"
    assert missing == []  # C is set (empty) and B has a default: nothing to warn about


def test_missing_names_reported_once_in_order() -> None:
    _, missing = substitute_env(["${B}", "${A}", "${B}"], {})
    assert missing == ["B", "A"]


def test_escape_and_non_variables_left_alone() -> None:
    out, missing = substitute_env(["$${HOME}", "$HOME", "${1BAD}", "cost $5"], {"HOME": "/h"})
    assert out == ["${HOME}", "$HOME", "${1BAD}", "cost $5"]
    assert missing == []


def test_value_cannot_inject_structure() -> None:
    out, _ = substitute_env({"a": "${V}"}, {"V": "x\nadmin_token: evil"})
    assert out == {"a": "x\nadmin_token: evil"}


def test_detect_none() -> None:
    assert detect_providers({}) == []
    assert detect_providers({"DEEPSEEK_API_KEY": ""}) == []


def test_detect_deepseek_and_openai() -> None:
    found = detect_providers({"OPENAI_API_KEY": "sk-o", "DEEPSEEK_API_KEY": "sk-d", "UNRELATED": "x"})
    assert found == [
        {
            "id": "deepseek",
            "kind": "openai",
            "name": "DeepSeek",
            "base_url": "https://api.deepseek.com",
            "api_key_env": "DEEPSEEK_API_KEY",
            "cache_lifetime": "1h",
            "dialects": ["openai", "anthropic"],  # SPEC §1.6: DeepSeek's Anthropic root is its own
            "base_urls": {"anthropic": "https://api.deepseek.com/anthropic"},
        },
        {
            "id": "openai",
            "kind": "openai",
            "name": "OpenAI",
            "base_url": "https://api.openai.com/v1",
            "api_key_env": "OPENAI_API_KEY",
            "cache_lifetime": "10m",
            "dialects": ["openai", "responses"],
        },
    ]


def test_detected_dialects_give_each_dialect_its_url() -> None:
    """DeepSeek's Messages go to its /anthropic root, OpenAI's Responses to /v1/responses; an Anthropic
    call there gets x-api-key (and the bearer, which DeepSeek also takes)."""
    from modelpool.config.schema import ProviderConfig
    from modelpool.upstream.providers import build_endpoint

    env = {"OPENAI_API_KEY": "sk-o", "DEEPSEEK_API_KEY": "sk-d"}
    providers = {p["id"]: ProviderConfig.model_validate(p) for p in detect_providers(env)}
    ds = build_endpoint(providers["deepseek"], "sk-d")
    assert ds.dialects == ("openai", "anthropic") and not ds.speaks("responses")
    assert ds.url_for("openai") == "https://api.deepseek.com/v1/chat/completions"
    assert ds.url_for("anthropic") == "https://api.deepseek.com/anthropic/v1/messages"
    assert ds.count_tokens_url == "https://api.deepseek.com/anthropic/v1/messages/count_tokens"
    assert ("x-api-key", "sk-d") in ds.headers_for("anthropic")
    assert ("Authorization", "Bearer sk-d") in ds.headers_for("openai")
    oa = build_endpoint(providers["openai"], "sk-o")
    assert oa.url_for("responses") == "https://api.openai.com/v1/responses" and not oa.speaks("anthropic")


def test_detect_kinds_and_alternative_vercel_var() -> None:
    env = {
        "ANTHROPIC_API_KEY": "a",
        "VERCEL_AI_GATEWAY_API_KEY": "v",
        "OPENROUTER_API_KEY": "o",
        "SILICONFLOW_API_KEY": "s",
    }
    by_id = {p["id"]: p for p in detect_providers(env)}
    assert by_id["anthropic"]["kind"] == "anthropic"
    assert by_id["anthropic"]["base_url"] == "https://api.anthropic.com"
    assert by_id["vercel"]["kind"] == "vercel"
    assert by_id["vercel"]["api_key_env"] == "VERCEL_AI_GATEWAY_API_KEY"
    assert by_id["vercel"]["base_url"] == "https://ai-gateway.vercel.sh"
    assert by_id["openrouter"]["kind"] == "openrouter"
    assert by_id["openrouter"]["base_url"] == "https://openrouter.ai/api"
    assert by_id["siliconflow"]["name"] == "硅基流动"
    assert all("models" not in p and "api_key" not in p for p in by_id.values())


def test_vercel_prefers_ai_gateway_var() -> None:
    found = detect_providers({"AI_GATEWAY_API_KEY": "a", "VERCEL_AI_GATEWAY_API_KEY": "b"})
    assert [p["api_key_env"] for p in found] == ["AI_GATEWAY_API_KEY"]


def test_every_known_provider_detects_and_validates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no ./modelpool.yaml, no user config: auto-detection
    env = {known.env_vars[0]: "key" for known in KNOWN_PROVIDERS}
    loaded = load_config(None, env={**env, "HOME": str(tmp_path)})
    assert loaded.path is None
    ids = [p.id for p in loaded.config.providers]
    assert ids == [k.id for k in KNOWN_PROVIDERS]
    assert {"groq", "kimi", "qwen", "zhipu", "mistral", "together", "fireworks", "xai"} <= set(ids)
    assert len(set(ids)) == len(ids)
