"""`kind: gemini` (SPEC §0, §1.6): AI Studio's two roots, its key header, env detection, its model list."""

from __future__ import annotations

from modelpool.config import load_config
from modelpool.config.env import detect_providers
from modelpool.upstream.discovery import parse_model_list
from modelpool.upstream.providers import ProviderEndpoint, build_endpoint


def endpoint(**extra: object) -> ProviderEndpoint:
    cfg = load_config(
        {
            "providers": [
                {
                    "id": "google",
                    "kind": "gemini",
                    "base_url": "https://generativelanguage.googleapis.com",
                    "api_key": "AIza-test-key-123",
                    "models": ["gemini-2.5-flash"],
                    **extra,
                }
            ],
            "holidays": {"source": "bundled"},
        }
    ).config
    return build_endpoint(cfg.providers[0], "AIza-test-key-123")


def test_gemini_kind_speaks_gemini_and_openai_at_its_two_roots() -> None:
    ep = endpoint()
    assert ep.dialects == ("gemini", "openai")
    root = "https://generativelanguage.googleapis.com/v1beta"
    assert ep.url_for("gemini", "gemini-2.5-flash", True) == (
        f"{root}/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    assert ep.url_for("gemini", "gemini-2.5-flash") == f"{root}/models/gemini-2.5-flash:generateContent"
    assert ep.url_for("openai") == f"{root}/openai/chat/completions"
    assert ep.models_url == f"{root}/openai/models"
    assert dict(ep.headers_for("gemini")) == {"x-goog-api-key": "AIza-test-key-123"}
    assert dict(ep.headers_for("openai")) == {"Authorization": "Bearer AIza-test-key-123"}
    assert "AIza-test-key-123" not in ep.redact("bad key AIza-test-key-123")


def test_a_versioned_base_url_and_an_own_openai_root() -> None:
    ep = endpoint(
        base_url="https://proxy.example/google/v1beta", base_urls={"openai": "https://other.example/v1"}
    )
    assert ep.url_for("gemini", "m") == "https://proxy.example/google/v1beta/models/m:generateContent"
    assert ep.url_for("openai") == "https://other.example/v1/chat/completions"


def test_env_detection() -> None:
    for var in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        found = [p for p in detect_providers({var: "AIza-x"}) if p["kind"] == "gemini"]
        assert found == [
            {
                "id": "gemini",
                "kind": "gemini",
                "name": "Google AI Studio",
                "base_url": "https://generativelanguage.googleapis.com",
                "api_key_env": var,
            }
        ]


def test_model_list_ids_lose_the_models_prefix() -> None:
    rows = parse_model_list(
        {"object": "list", "data": [{"id": "models/gemini-2.5-flash", "object": "model"}]}
    )
    assert [m.id for m in rows] == ["gemini-2.5-flash"]
