"""Environment handling: `${NAME}` substitution and provider auto-detection (SPEC §1.5).

Substitution runs on the *parsed* YAML, string by string, so a variable's value can never inject YAML
structure (a key containing `\\n  admin_token: x` stays one string).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from modelpool.offloop import pace

T = TypeVar("T")

# `$${NAME}` is an escape for a literal `${NAME}`; `${NAME:-default}` uses default when unset or empty.
_VAR_RE = re.compile(r"\$(\$)?\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def substitute_env(obj: T, env: Mapping[str, str]) -> tuple[T, list[str]]:
    """Replace `${NAME}` / `${NAME:-default}` in every string value of `obj` (dicts and lists recursively).

    Returns the new object and the names that were unset and had no default (each once, in order);
    those became "" so the caller can warn instead of failing.
    """
    missing: list[str] = []
    return _walk(obj, env, missing), missing


def _walk(obj: Any, env: Mapping[str, str], missing: list[str]) -> Any:
    if isinstance(obj, str):
        return _substitute_str(obj, env, missing)
    if isinstance(obj, dict):
        pace()  # a reload's load is paced (offloop.py): 10,000 routes are ~10,000 values
        return {k: _walk(v, env, missing) for k, v in obj.items()}
    if isinstance(obj, list):
        pace()
        return [_walk(v, env, missing) for v in obj]
    return obj


def _substitute_str(text: str, env: Mapping[str, str], missing: list[str]) -> str:
    def replace(m: re.Match[str]) -> str:
        escaped, name, default = m.group(1), m.group(2), m.group(3)
        if escaped:
            return m.group(0)[1:]
        value = env.get(name)
        if value:
            return value
        if default is not None:
            return default
        if value is None and name not in missing:
            missing.append(name)
        return ""

    return _VAR_RE.sub(replace, text)


@dataclass(frozen=True, slots=True)
class KnownProvider:
    """A provider modelpool recognises from its API-key variable when no config names providers."""

    id: str
    name: str
    base_url: str
    env_vars: tuple[str, ...]  # first non-empty one wins
    kind: str = "openai"
    cache_lifetime: str | None = None  # prompt-cache lifetime, when the provider documents one
    dialects: tuple[str, ...] = ()  # SPEC §1.6: what it speaks natively, when more than its kind's default
    base_urls: tuple[tuple[str, str], ...] = ()  # a dialect's own API root


# The one table to extend. Order matters: it is the registration order routing falls back on.
KNOWN_PROVIDERS: tuple[KnownProvider, ...] = (
    KnownProvider(
        "deepseek",
        "DeepSeek",
        "https://api.deepseek.com",
        ("DEEPSEEK_API_KEY",),
        cache_lifetime="1h",
        dialects=("openai", "anthropic"),
        base_urls=(("anthropic", "https://api.deepseek.com/anthropic"),),
    ),
    KnownProvider(
        "openai",
        "OpenAI",
        "https://api.openai.com/v1",
        ("OPENAI_API_KEY",),
        cache_lifetime="10m",
        dialects=("openai", "responses"),
    ),
    KnownProvider("anthropic", "Anthropic", "https://api.anthropic.com", ("ANTHROPIC_API_KEY",), "anthropic"),
    KnownProvider(
        "gemini",
        "Google AI Studio",
        "https://generativelanguage.googleapis.com",
        ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        "gemini",
    ),
    KnownProvider(
        "vercel",
        "Vercel AI Gateway",
        "https://ai-gateway.vercel.sh",
        ("AI_GATEWAY_API_KEY", "VERCEL_AI_GATEWAY_API_KEY"),
        "vercel",
    ),
    KnownProvider(
        "openrouter", "OpenRouter", "https://openrouter.ai/api", ("OPENROUTER_API_KEY",), "openrouter"
    ),
    KnownProvider("siliconflow", "硅基流动", "https://api.siliconflow.cn/v1", ("SILICONFLOW_API_KEY",)),
    KnownProvider("groq", "Groq", "https://api.groq.com/openai/v1", ("GROQ_API_KEY",)),
    KnownProvider("kimi", "Kimi (Moonshot)", "https://api.moonshot.cn/v1", ("MOONSHOT_API_KEY",)),
    KnownProvider(
        "qwen",
        "Qwen (DashScope)",
        "https://dashscope.aliyuncs.com/compatible-mode/v1",
        ("DASHSCOPE_API_KEY",),
    ),
    KnownProvider("zhipu", "Zhipu GLM", "https://open.bigmodel.cn/api/paas/v4", ("ZHIPUAI_API_KEY",)),
    KnownProvider("mistral", "Mistral", "https://api.mistral.ai/v1", ("MISTRAL_API_KEY",)),
    KnownProvider("together", "Together AI", "https://api.together.xyz/v1", ("TOGETHER_API_KEY",)),
    KnownProvider(
        "fireworks", "Fireworks AI", "https://api.fireworks.ai/inference/v1", ("FIREWORKS_API_KEY",)
    ),
    KnownProvider("xai", "xAI", "https://api.x.ai/v1", ("XAI_API_KEY",)),
)


def detect_providers(env: Mapping[str, str]) -> list[dict[str, Any]]:
    """Provider config dicts for every known key variable with a non-empty value.

    The dicts name the variable (`api_key_env`), never the key itself, and carry no `models`
    so the models are discovered from the provider's model list.
    """
    found: list[dict[str, Any]] = []
    for known in KNOWN_PROVIDERS:
        var = next((v for v in known.env_vars if env.get(v)), None)
        if var is None:
            continue
        entry: dict[str, Any] = {
            "id": known.id,
            "kind": known.kind,
            "name": known.name,
            "base_url": known.base_url,
            "api_key_env": var,
        }
        if known.cache_lifetime is not None:
            entry["cache_lifetime"] = known.cache_lifetime
        if known.dialects:
            entry["dialects"] = list(known.dialects)
        if known.base_urls:
            entry["base_urls"] = dict(known.base_urls)
        found.append(entry)
    return found


def known_key_vars() -> list[str]:
    """Every variable auto-detection looks at (for "nothing detected" hints)."""
    return [v for known in KNOWN_PROVIDERS for v in known.env_vars]
