"""What `modelpool config import-litellm` knows about LiteLLM: provider prefixes, strategies, settings.

Kept apart from the converter so the tables can grow without touching the logic. Sources: LiteLLM's
`Router.__init__` (routing strategies, `num_retries`, `timeout`, `allowed_fails`, `cooldown_time`,
`retry_after`), its simple-shuffle (draws by `weight`, else `rpm`, else `tpm`) and its order filter (lowest
`order` first).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from modelpool.config.env import KNOWN_PROVIDERS

_KNOWN = {k.id: k for k in KNOWN_PROVIDERS}


@dataclass(frozen=True)
class Prefix:
    """A LiteLLM provider prefix (`openai/gpt-4o`) as a modelpool provider."""

    provider_id: str
    kind: str
    base_url: str | None  # None: the deployment must give api_base
    key_env: str | None  # the variable LiteLLM reads when the deployment names no api_key
    name: str | None = None


def _known(litellm_prefix: str, known_id: str, key_env: str) -> tuple[str, Prefix]:
    k = _KNOWN[known_id]
    return litellm_prefix, Prefix(known_id, k.kind, k.base_url, key_env, k.name)


# LiteLLM prefixes whose API is one modelpool speaks (OpenAI chat completions or Anthropic Messages).
PREFIXES: dict[str, Prefix] = dict(
    [
        _known("openai", "openai", "OPENAI_API_KEY"),
        _known("anthropic", "anthropic", "ANTHROPIC_API_KEY"),
        _known("deepseek", "deepseek", "DEEPSEEK_API_KEY"),
        _known("openrouter", "openrouter", "OPENROUTER_API_KEY"),
        _known("vercel_ai_gateway", "vercel", "VERCEL_AI_GATEWAY_API_KEY"),
        _known("groq", "groq", "GROQ_API_KEY"),
        _known("mistral", "mistral", "MISTRAL_API_KEY"),
        _known("together_ai", "together", "TOGETHERAI_API_KEY"),
        _known("fireworks_ai", "fireworks", "FIREWORKS_AI_API_KEY"),
        _known("xai", "xai", "XAI_API_KEY"),
        _known("dashscope", "qwen", "DASHSCOPE_API_KEY"),
        _known("moonshot", "kimi", "MOONSHOT_API_KEY"),
    ]
)
PREFIXES.update(
    {
        "deepinfra": Prefix(
            "deepinfra", "openai", "https://api.deepinfra.com/v1/openai", "DEEPINFRA_API_KEY"
        ),
        "perplexity": Prefix("perplexity", "openai", "https://api.perplexity.ai", "PERPLEXITYAI_API_KEY"),
        "cerebras": Prefix("cerebras", "openai", "https://api.cerebras.ai/v1", "CEREBRAS_API_KEY"),
        "gemini": Prefix(
            "gemini", "openai", "https://generativelanguage.googleapis.com/v1beta/openai", "GEMINI_API_KEY"
        ),
        "ollama": Prefix("ollama", "openai", "http://localhost:11434/v1", None),
        "ollama_chat": Prefix("ollama", "openai", "http://localhost:11434/v1", None),
        "lm_studio": Prefix("lm-studio", "openai", "http://localhost:1234/v1", None),
        "hosted_vllm": Prefix("vllm", "openai", None, None),
        "openai_like": Prefix("openai-like", "openai", None, None),
        "custom_openai": Prefix("openai-like", "openai", None, None),
        # Azure OpenAI's v1 API (`{api_base}/openai/v1`) is OpenAI-compatible and takes the key as a bearer.
        "azure": Prefix("azure", "openai", None, "AZURE_API_KEY", "Azure OpenAI"),
    }
)

# Prefixes that need a request signer or a different wire format modelpool does not speak.
FOREIGN_APIS = {
    "bedrock": "AWS Bedrock needs SigV4-signed requests",
    "sagemaker": "AWS SageMaker needs SigV4-signed requests",
    "vertex_ai": "Vertex AI needs Google service-account auth",
    "azure_ai": "Azure AI Foundry model deployments use their own URL scheme",
    "cohere": "Cohere's chat API is not OpenAI-compatible",
    "cohere_chat": "Cohere's chat API is not OpenAI-compatible",
    "huggingface": "Hugging Face inference endpoints vary by task",
    "replicate": "Replicate's prediction API is not a chat API",
    "text-completion-openai": "legacy text completions are not chat completions",
}

# LiteLLM routing strategy → (modelpool strategy, what differs).
STRATEGIES: dict[str, tuple[str, str]] = {
    "simple-shuffle": (
        "weighted-random",
        "draws by provider `weight` (from the deployments' weight, else rpm, else tpm, as LiteLLM's shuffle)",
    ),
    "least-busy": ("least-used", "modelpool counts calls served, not calls in flight"),
    "usage-based-routing": ("least-used", "modelpool balances calls served, not tokens per minute"),
    "usage-based-routing-v2": ("least-used", "modelpool balances calls served, not tokens per minute"),
    "latency-based-routing": (
        "fastest",
        "modelpool ranks by EWMA time to first chunk; unmeasured routes are probed first",
    ),
    "cost-based-routing": ("cheapest", "cost hints come from input/output_cost_per_token where given"),
}

# model_info `mode` values that are not chat: such deployments are left out.
NON_CHAT_MODES = {
    "embedding",
    "image_generation",
    "audio_transcription",
    "audio_speech",
    "rerank",
    "moderation",
    "video_generation",
    "ocr",
    "search",
}

# Settings modelpool has no counterpart for, with the reason the report gives.
UNMAPPED_REASONS: dict[str, str] = {
    "allowed_fails": "modelpool rests a route after `retries_per_route` retries of one failure, "
    "not after N failures per minute",
    "allowed_fails_policy": "failure kinds decide rests in modelpool (quota, rate-limit, auth, …)",
    "retry_policy": "failure kinds decide retries in modelpool (quota and auth are never retried)",
    "disable_cooldowns": "modelpool always rests a failing route (lower `pool.cooldown` instead)",
    "enable_pre_call_checks": "not needed: modelpool always demotes routes whose context window is too small",
    "content_policy_fallbacks": "a refusal is an answer in modelpool; it is never switched away from",
    "routing_strategy_args": "modelpool's strategies take no arguments",
    "provider_budget_config": "modelpool keeps no spend budgets",
    "max_budget": "modelpool keeps no spend budgets",
    "budget_duration": "modelpool keeps no spend budgets",
    "cache": "modelpool does not cache responses (providers' prompt caches stay warm through sticky routing)",
    "cache_params": "modelpool does not cache responses",
    "cache_responses": "modelpool does not cache responses",
    "drop_params": "modelpool relays parameters as sent and translates them between dialects",
    "set_verbose": "use `modelpool serve --log-level debug`",
    "json_logs": "logging is configured on the command line",
    "success_callback": "no callbacks: use /metrics, /admin/events or the dashboard",
    "failure_callback": "no callbacks: use /metrics, /admin/events or the dashboard",
    "callbacks": "no callbacks: use /metrics, /admin/events or the dashboard",
    "database_url": "modelpool keeps no database of keys or spend",
    "store_model_in_db": "models live in modelpool.yaml (live-reloaded) and the dashboard layer",
    "alerting": "no alerting integration: scrape /metrics",
    "tags": "modelpool has no tag routing",
    "enable_tag_filtering": "modelpool has no tag routing",
    "rpm": "not enforced: modelpool reads the limits the upstream announces (pool.quota) and rests on a 429",
    "tpm": "not enforced: modelpool reads the limits the upstream announces (pool.quota) and rests on a 429",
    "max_parallel_requests": "modelpool enforces no concurrency limits per route",
    "max_retries": "per-deployment retries: modelpool has one `pool.retries_per_route` for all routes",
    "timeout": "not carried over: set `providers[].timeouts.response` (or a `model_info` entry's) by hand",
    "stream_timeout": "not carried over: set `providers[].timeouts.first_byte` (or a model_info entry's)",
    "environment_variables": "set these in the environment (modelpool reads `${VAR}` and `api_key_env`)",
}
GENERIC_REASON = "no modelpool counterpart"
PARAM_REASON = "a per-deployment request default: modelpool sends the client's parameters as they come"

FALLBACK_HOW = {
    "fallbacks": "pool.model_fallback: after a pool's routes fail, modelpool tries other pools (same family "
    "first, then by score), not a per-model list",
    "default_fallbacks": "pool.model_fallback (see fallbacks)",
    "context_window_fallbacks": "routes too small for the conversation are demoted within a pool; across "
    "pools, pool.model_fallback applies",
}


def split_model(model: str, custom: Any) -> tuple[str | None, str]:
    """`openai/gpt-4o` → (openai, gpt-4o); `openrouter/a/b` → (openrouter, a/b); bare names are inferred."""
    if isinstance(custom, str) and custom:
        return custom, model
    head, sep, rest = model.partition("/")
    if sep and (head in PREFIXES or head in FOREIGN_APIS):
        return head, rest
    lowered = model.lower()
    if lowered.startswith("claude"):
        return "anthropic", model
    if lowered.startswith(("gpt-", "o1", "o3", "o4", "chatgpt")):
        return "openai", model
    if lowered.startswith("deepseek"):
        return "deepseek", model
    return (head, rest) if sep else (None, model)


def model_info(info: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(info.get("max_input_tokens"), int) and info["max_input_tokens"] > 0:
        out["context_window"] = info["max_input_tokens"]
    if isinstance(info.get("supports_vision"), bool):
        out["input"] = ["text", "image"] if info["supports_vision"] else ["text"]
    if isinstance(info.get("supports_function_calling"), bool):
        out["tools"] = info["supports_function_calling"]
    return out


def fallback_pairs(value: Any, key: str) -> list[tuple[str, str]]:
    """LiteLLM writes fallbacks as `[{src: [dst, …]}, …]`; default_fallbacks as `[dst, …]`."""
    pairs: list[tuple[str, str]] = []
    for item in value if isinstance(value, list) else []:
        if isinstance(item, str) and key == "default_fallbacks":
            pairs.append(("*", item))
        elif isinstance(item, dict):
            for src, dsts in item.items():
                pairs += [(str(src), str(d)) for d in (dsts if isinstance(dsts, list) else [dsts])]
    return pairs


# The keys the converter maps (anything else in these sections is reported as not mapped).
ENV_PREFIX = "os.environ/"
ROUTER_KEYS = {"routing_strategy", "num_retries", "timeout", "stream_timeout", "cooldown_time"}
ROUTER_KEYS |= {
    "retry_after",
    "model_group_alias",
    "redis_host",
    "redis_port",
    "redis_password",
    "redis_url",
}
FALLBACK_KEYS = ("fallbacks", "default_fallbacks", "context_window_fallbacks")
PARAM_KEYS = {"model", "api_base", "base_url", "api_key", "weight", "order", "api_version"}
PARAM_KEYS |= {"input_cost_per_token", "output_cost_per_token", "custom_llm_provider", "extra_headers"}
INFO_KEYS = {"mode", "max_input_tokens", "supports_vision", "supports_function_calling", "id", "base_model"}
