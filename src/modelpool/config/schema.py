"""The configuration schema of SPEC §1.5, validated with pydantic v2.

Every key here is public interface. Durations are seconds (float) after validation; they accept
numbers of seconds or strings with a unit (`300ms`, `60s`, `12h`). Sizes accept `32MiB` etc.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from modelpool.config.calendar import HolidaysConfig, PeakConfig
from modelpool.config.hedge import HedgeConfig, SpeedConfig
from modelpool.config.limits import QuotaConfig, TimeoutsConfig, TimeoutsOverride
from modelpool.config.prices import ApiKey, PricesConfig, PriceSource
from modelpool.config.units import parse_duration, parse_size

Duration = Annotated[float, BeforeValidator(parse_duration)]
Size = Annotated[int, BeforeValidator(parse_size)]

EFFORT_TIERS = ("off", "minimal", "low", "medium", "high", "xhigh", "max")
Effort = Literal["off", "minimal", "low", "medium", "high", "xhigh", "max"]
ProviderKind = Literal["openai", "anthropic", "vercel", "openrouter", "gemini", "llamacpp"]
# SPEC §1.6: Chat Completions, Messages, Responses, the Gemini API
Dialect = Literal["openai", "anthropic", "responses", "gemini"]
DIALECTS: tuple[Dialect, ...] = ("openai", "anthropic", "responses")  # what aggregators speak
# What each kind speaks unless `providers[].dialects` says otherwise (SPEC §1.6).
KIND_DIALECTS: dict[str, tuple[Dialect, ...]] = {
    "openai": ("openai",),
    "anthropic": ("anthropic",),
    "vercel": DIALECTS,
    "openrouter": DIALECTS,
    # llama.cpp's llama-server (and local servers of the same shape) answers all three on one root.
    "llamacpp": DIALECTS,
    "gemini": ("gemini", "openai"),  # the OpenAI dialect at …/v1beta/openai
}
# Kinds that serve a model on the operator's own machine: no price library lookup (SPEC §14).
LOCAL_KINDS: frozenset[str] = frozenset({"llamacpp"})
Strategy = Literal[
    "priority", "round-robin", "weighted-random", "least-used", "fastest", "cheapest", "throughput", "score"
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def _default_forward_headers() -> dict[Dialect, list[str]]:
    # Codex's own headers ride along on the OpenAI dialects: OpenAI routes prompt caching by `session_id`
    # and reads `originator`; unknown headers are ignored by other providers.
    codex = ["originator", "session_id", "session-id", "x-codex-*"]
    return {
        "openai": ["openai-*", *codex],
        "anthropic": ["anthropic-*"],
        "responses": ["openai-*", *codex],
        "gemini": ["x-goog-*"],  # never x-goog-api-key (request._NEVER)
    }


class ServerConfig(_Model):
    host: str = "127.0.0.1"
    port: int = Field(default=4000, ge=0, le=65535)
    api_keys: list[ApiKey] = Field(default_factory=list)  # strings, or objects with limits (SPEC §14)
    admin_token: str | None = None
    max_body: Size = 32 * 1024**2
    # Request headers a native attempt forwards to the upstream, per client dialect (glob patterns, case-
    # insensitive). The client's own key, hop-by-hop headers and `x-modelpool-*` are never forwarded,
    # whatever this says (README "Native relays").
    forward_headers: dict[Dialect, list[str]] = Field(default_factory=_default_forward_headers)
    # The HTTP server under `modelpool serve` (`--http-server` wins); both keep the same promises
    # (cli/http_server.py), the figures that chose the default are in bench/RESULTS.md.
    http_server: Literal["uvicorn", "granian"] = "uvicorn"

    @field_validator("api_keys", mode="before")
    @classmethod
    def _drop_empty_keys(cls, v: Any) -> Any:
        # `api_keys: [${CLIENT_KEY}]` with the variable unset must not make "" a valid client key.
        if not isinstance(v, list):
            return v
        return [k for k in v if k != "" and not (isinstance(k, dict) and k.get("key") == "")]

    @field_validator("admin_token", mode="before")
    @classmethod
    def _empty_token_is_none(cls, v: Any) -> Any:
        return None if v == "" else v


class StateConfig(_Model):
    backend: Literal["memory", "sqlite", "redis"] = "sqlite"
    path: str = "~/.local/state/modelpool/state.db"
    redis_url: str = "redis://127.0.0.1:6379/0"
    redis_prefix: str = Field(default="modelpool", min_length=1)  # one Redis, several deployments
    persist_ttl: Duration = 24 * 3600.0


class SessionsConfig(_Model):
    """Per-session call history (SPEC §8): how much of it the state backend keeps."""

    calls_kept: int = Field(default=200, ge=1, le=100_000)  # the last N calls of each session
    kept: int = Field(default=2000, ge=1, le=1_000_000)  # the most recently active sessions
    ttl: Duration = 7 * 24 * 3600.0  # a session idle this long is forgotten (its signer entries too: §3.10)
    # SPEC §3.10: signature digests → signer kept in each process's memory (least recently used forgotten)
    signatures_kept: int = Field(default=200_000, ge=1, le=10_000_000)


class ModelInfo(_Model):
    context_window: int | None = Field(default=None, gt=0)
    efforts: list[Effort] | None = None
    input: list[Literal["text", "image", "audio", "file"]] | None = None
    tools: bool | None = None
    prices: PricesConfig | None = None  # SPEC §14: this model's prices (USD per 1M tokens)
    timeouts: TimeoutsOverride | None = None  # SPEC §3.9: this model's own limits

    @field_validator("efforts", mode="before")
    @classmethod
    def _yaml_off_effort(cls, v: Any) -> Any:
        # YAML 1.1 reads `efforts: [off, high]` as [False, "high"].
        return ["off" if e is False else e for e in v] if isinstance(v, list) else v


class PeriodCost(_Model):
    peak: float = Field(ge=0)
    off_peak: float = Field(ge=0)


CostHint = float | PeriodCost


class ProviderConfig(_Model):
    id: str = Field(min_length=1)
    kind: ProviderKind = "openai"
    name: str | None = None
    base_url: str
    api_key: str | None = None
    api_key_env: str | None = None
    models: list[str] | None = None
    model_info: dict[str, ModelInfo] = Field(default_factory=dict)
    weight: float = Field(default=1.0, ge=0)
    cost: CostHint | None = None
    cache_lifetime: Duration | None = None
    prices: PricesConfig | None = None  # SPEC §14; `{source: off}`: no library prices for this provider
    headers: dict[str, str] = Field(default_factory=dict)
    dialects: list[Dialect] | None = None  # None: the kind's default (KIND_DIALECTS)
    base_urls: dict[Dialect, str] = Field(default_factory=dict)  # a dialect's own API root
    timeouts: TimeoutsOverride | None = None  # SPEC §3.9: this provider's own limits

    @field_validator("id")
    @classmethod
    def _id_has_no_slash(cls, v: str) -> str:
        if "/" in v or v.strip() != v:
            raise ValueError("a provider id may not contain '/' or surrounding spaces")
        return v

    @field_validator("api_key", mode="before")
    @classmethod
    def _empty_key_is_none(cls, v: Any) -> Any:
        # `api_key: ${UNSET}` substitutes to "": treat as "no inline key" so api_key_env still applies.
        return None if v == "" else v

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, v: str) -> str:
        if not re.match(r"^https?://[^\s/]+", v):
            raise ValueError(f"base_url must be an http(s) URL, got {v!r}")
        return v

    @field_validator("base_urls")
    @classmethod
    def _http_urls(cls, v: dict[str, str]) -> dict[str, str]:
        for dialect, url in v.items():
            if not re.match(r"^https?://[^\s/]+", url):
                raise ValueError(f"base_urls.{dialect} must be an http(s) URL, got {url!r}")
        return v

    @field_validator("dialects")
    @classmethod
    def _some_dialect(cls, v: list[str] | None) -> list[str] | None:
        if v is not None and not v:
            raise ValueError("dialects may not be empty (omit it for the kind's default)")
        return list(dict.fromkeys(v)) if v is not None else None

    @property
    def display_name(self) -> str:
        return self.name or self.id

    @property
    def effective_dialects(self) -> tuple[Dialect, ...]:
        return tuple(self.dialects) if self.dialects else KIND_DIALECTS[self.kind]


class GroupConfig(_Model):
    id: str = Field(min_length=1)
    name: str | None = None
    models: list[str] = Field(min_length=1)
    merge: bool = True


def _default_groups() -> list[GroupConfig]:
    return [
        GroupConfig(
            id="deepseek-v4.1-flash",
            name="DeepSeek V4.1 Flash",
            models=["deepseek-v4.1-flash*", "deepseek-flash"],
        ),
        GroupConfig(id="glm-5.3-flash", name="GLM 5.3 Flash", models=["glm-5.3-flash*"]),
    ]


class ScoreWeights(_Model):
    connectivity: float = Field(default=0.5, ge=0)
    speed: float = Field(default=0.3, ge=0)


class PoolConfig(_Model):
    strategy: Strategy = "fastest"
    sticky: bool = True
    fallback: bool = True
    model_fallback: Literal["off", "same-family", "any"] = "off"
    max_attempts: int = Field(default=4, ge=1, le=8)
    retries_per_route: int = Field(default=2, ge=0, le=5)
    retry_backoff: Duration = 0.3
    cooldown: Duration = 60.0
    max_cooldown: Duration = 1800.0
    quota_cooldown: Duration = 12 * 3600.0
    quota_reset_hour: int = Field(default=0, ge=0, le=23)
    provider_order: list[str] = Field(default_factory=list)
    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)
    exclude_models: list[str] = Field(default_factory=list)
    exclude_patterns: list[str] = Field(default_factory=list)
    disabled: list[str] = Field(default_factory=list)
    enabled: list[str] = Field(default_factory=list)
    disabled_providers: list[str] = Field(default_factory=list)
    twin_suffixes: list[str] = Field(default_factory=lambda: ["-vision"])
    weights: dict[str, float] = Field(default_factory=dict)
    costs: dict[str, CostHint] = Field(default_factory=dict)
    prefer_same_model: bool = True
    score_weights: ScoreWeights = Field(default_factory=ScoreWeights)
    confirm_switch: Literal["off", "ask"] = "off"
    confirm_timeout: Duration = 20.0
    notice: Literal["header", "inline"] = "header"
    # SPEC §1.6: what a translating route cannot carry and that would change the answer is refused (400
    # naming the field) when no route can carry it — except, by default (`tools`), hosted tools the
    # client only offers (web_search, …): those are left out and named in `x-modelpool-dropped`.
    # `refuse` refuses those too; `allow` serves everything and names what was left out.
    lossy_translation: Literal["tools", "refuse", "allow"] = "tools"
    # SPEC §3.11: cache breakpoints on calls translated onto a Messages route (native ones are left as sent)
    prompt_cache: Literal["auto", "off"] = "auto"
    purposes: list[str] = Field(default_factory=lambda: ["compaction", "session-title"])
    hedge: HedgeConfig = Field(default_factory=HedgeConfig)
    quota: QuotaConfig = Field(default_factory=QuotaConfig)
    speed: SpeedConfig = Field(default_factory=SpeedConfig)
    groups: list[GroupConfig] = Field(default_factory=_default_groups)

    @field_validator("quota_cooldown")
    @classmethod
    def _quota_ceiling(cls, v: float) -> float:
        if v > 26 * 3600.0:
            raise ValueError("quota_cooldown may not exceed 26h")
        return v

    @field_validator("exclude_patterns")
    @classmethod
    def _drop_bad_regexes(cls, v: list[str]) -> list[str]:
        # SPEC §1.5: invalid patterns are skipped (the loader warns), so consumers may compile blindly.
        return [p for p in v if _is_regex(p)]

    @field_validator("groups")
    @classmethod
    def _unique_group_ids(cls, v: list[GroupConfig]) -> list[GroupConfig]:
        _check_unique([g.id for g in v], "group id")
        return v

    @field_validator("confirm_timeout")
    @classmethod
    def _confirm_bounds(cls, v: float) -> float:
        if not 1.0 <= v <= 600.0:
            raise ValueError("confirm_timeout must be between 1s and 10m")
        return v

    @field_validator("confirm_switch", mode="before")
    @classmethod
    def _yaml_off(cls, v: Any) -> Any:
        # YAML 1.1 reads a bare `off` as False.
        return "off" if v is False else v

    @field_validator("model_fallback", mode="before")
    @classmethod
    def _yaml_off_fallback(cls, v: Any) -> Any:
        return "off" if v is False else v


def _is_regex(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


def _check_unique(ids: list[str], what: str) -> None:
    seen: set[str] = set()
    for i in ids:
        if i in seen:
            raise ValueError(f"duplicate {what} {i!r}")
        seen.add(i)


class GatewayRankingConfig(_Model):
    enabled: bool = True
    stats_ttl: Duration = 900.0
    min_uptime: float = Field(default=90, ge=0, le=100)


class MetricsConfig(_Model):
    """`GET /metrics` (Prometheus text format). It names routes and traffic, so by default it asks for a
    bearer token like the admin API: the admin token or `token` (a scrape-only secret)."""

    enabled: bool = True
    token: str | None = None
    require_token: bool = True

    @field_validator("token", mode="before")
    @classmethod
    def _empty_token_is_none(cls, v: Any) -> Any:
        return None if v == "" else v


class LoggingConfig(_Model):
    """Read when `modelpool serve` starts. `auto` writes JSON lines when stderr is not a terminal."""

    format: Literal["auto", "json", "text"] = "auto"
    level: Literal["debug", "info", "warning", "error"] = "info"

    @field_validator("level", mode="before")
    @classmethod
    def _lower(cls, v: Any) -> Any:
        return v.lower() if isinstance(v, str) else v


class TracingConfig(_Model):
    """OpenTelemetry traces over OTLP/HTTP (SPEC §1.2; needs the `modelpool[otel]` extra)."""

    otlp_endpoint: str = "http://127.0.0.1:4318"  # the collector; `/v1/traces` is added unless given
    service_name: str = "modelpool"
    # The share of new traces kept; a client that sent a sampled `traceparent` keeps its decision.
    sample: float = Field(default=1.0, ge=0.0, le=1.0)

    @field_validator("otlp_endpoint")
    @classmethod
    def _http_url(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL (OTLP over HTTP)")
        return v


class Config(_Model):
    server: ServerConfig = Field(default_factory=ServerConfig)
    state: StateConfig = Field(default_factory=StateConfig)
    sessions: SessionsConfig = Field(default_factory=SessionsConfig)
    timeouts: TimeoutsConfig = Field(default_factory=TimeoutsConfig)
    providers: list[ProviderConfig] = Field(default_factory=list)
    aliases: dict[str, str] = Field(default_factory=dict)
    pool: PoolConfig = Field(default_factory=PoolConfig)
    peak: PeakConfig = Field(default_factory=PeakConfig)
    holidays: HolidaysConfig = Field(default_factory=HolidaysConfig)
    gateway_ranking: GatewayRankingConfig = Field(default_factory=GatewayRankingConfig)
    metrics: MetricsConfig = Field(default_factory=MetricsConfig)
    logging: LoggingConfig = Field(default_factory=LoggingConfig)
    prices: PriceSource = Field(default_factory=PriceSource)  # `{source: off}`: no price library at all
    tracing: TracingConfig | None = None  # absent: no spans, OpenTelemetry never imported

    @field_validator("providers")
    @classmethod
    def _unique_provider_ids(cls, v: list[ProviderConfig]) -> list[ProviderConfig]:
        # A field validator (not a model validator) so the error carries the path `providers`.
        _check_unique([p.id for p in v], "provider id")
        return v

    def provider(self, provider_id: str) -> ProviderConfig | None:
        for p in self.providers:
            if p.id == provider_id:
                return p
        return None
