"""Declarative description of a simulated fleet: plain dataclasses, easy to build in tests.

A `FleetSpec` lists `SimProvider`s (one HTTP server each); a provider serves `SimModel`s and may carry
scripted `Fault`s. Aggregator providers (kind "vercel") also list `InnerProvider`s whose speed decides
how fast a call streams and whose figures are published as endpoint stats.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal, get_args

ProviderKind = Literal["openai", "anthropic", "vercel"]

FaultKind = Literal[
    "quota",  # 429 + "insufficient balance / 余额不足"
    "rate_limit",  # 429 + Retry-After
    "auth",  # 401
    "server_error",  # 5xx (default 500)
    "status",  # any status + message
    "unsupported",  # 400 "does not support …"
    "reset",  # close the TCP connection before any response byte
    "cut",  # stream `after_tokens` content tokens, then drop the connection
    "stall",  # go silent (before headers, or after `after_tokens` tokens)
    "malformed",  # a non-JSON `data:` line after `after_tokens` tokens
    "no_terminator",  # a complete answer without `[DONE]` / `message_stop`
    "error_event",  # a mid-stream error event after `after_tokens` tokens
    "trickle",  # a slow but flowing reply: one content token every `delay` seconds
]

FAULT_KINDS: frozenset[str] = frozenset(get_args(FaultKind))

# Kinds answered with an HTTP error status instead of a 200 stream.
STATUS_KINDS: frozenset[str] = frozenset(
    {"quota", "rate_limit", "auth", "server_error", "status", "unsupported"}
)


@dataclass
class Fault:
    """One scripted failure.

    Selection (all given conditions must hold; none given = every matching call):
    `times` — the next N matching calls, then the fault retires; `every` — every k-th matching call;
    `probability` — a draw from the fleet's seeded RNG. A call matches when `model` (if set) equals the
    requested model id and, on an aggregator, `inner` (if set) equals the inner provider picked.

    `delay` is a wait before the fault acts; for `stall` it is the stall length (0 = until the client
    hangs up). `stall` with `after_tokens == 0` and `headers=False` stalls before the first response
    byte; with `headers=True` or `after_tokens > 0` it sends headers (and that many content tokens) first.
    After a finite stall the reply continues normally.

    `trickle` paces the answer at one content token every `delay` seconds (after `after_tokens` tokens at
    the model's speed); a non-streamed reply is held back as long as the streamed one would take, like a
    slow generation answered whole.
    """

    kind: FaultKind
    times: int | None = None
    every: int | None = None
    probability: float | None = None
    after_tokens: int = 0
    status: int | None = None
    message: str | None = None
    retry_after: float | None = None
    delay: float = 0.0
    model: str | None = None
    inner: str | None = None
    headers: bool = False

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; known: {sorted(FAULT_KINDS)}")
        if self.every is not None and self.every < 1:
            raise ValueError("Fault.every must be >= 1")

    def to_dict(self) -> dict[str, Any]:
        defaults = Fault(kind=self.kind)
        return {k: v for k, v in asdict(self).items() if k == "kind" or v != getattr(defaults, k)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Fault:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown fault field(s): {sorted(unknown)}")
        return cls(**data)


@dataclass
class SimModel:
    """A model a provider serves. `None` speed/timing fields inherit the provider's."""

    id: str
    ttft: float | None = None
    tps: float | None = None
    reasoning_tokens: int = 0
    output_tokens: int = 24
    tools: bool = True
    images: bool = False
    context_window: int | None = None
    efforts: list[str] | None = None
    declared_type: str | None = "language"
    # Prompt caching as reported in usage (issue #19): this many prompt tokens are cache reads / writes.
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


@dataclass
class InnerProvider:
    """A provider behind an aggregator. `tps is None` publishes null stats (no recent traffic)."""

    name: str
    tps: float | None = None
    ttft_ms: float | None = None
    uptime_15m: float | None = 100.0
    status: int = 0
    tools: bool = True
    context_length: int = 128000


@dataclass
class SimProvider:
    """One upstream endpoint with its own port. `api_key` set ⇒ calls without it get 401.

    `affinity_ttl` (aggregator only, seconds; None = off) keeps a session on the inner provider that
    served it last, like Vercel's session affinity.
    """

    id: str
    kind: ProviderKind = "openai"
    models: list[SimModel] = field(default_factory=list)
    ttft: float = 0.05
    tps: float = 200.0
    faults: list[Fault] = field(default_factory=list)
    api_key: str | None = None
    inner: list[InnerProvider] = field(default_factory=list)
    default_inner: str | None = None
    name: str | None = None
    affinity_ttl: float | None = None

    def model(self, model_id: str) -> SimModel | None:
        for m in self.models:
            if m.id == model_id:
                return m
        return None


@dataclass
class FleetSpec:
    """The whole fleet. `fast=True` removes the providers' pacing (ttft 0, unbounded tok/s) for benchmarks;
    a model with its own `ttft`/`tps` keeps them."""

    providers: list[SimProvider]
    seed: int = 1
    fast: bool = False

    def __post_init__(self) -> None:
        ids = [p.id for p in self.providers]
        dupes = {i for i in ids if ids.count(i) > 1}
        if dupes:
            raise ValueError(f"duplicate provider id(s): {sorted(dupes)}")

    def provider(self, provider_id: str) -> SimProvider:
        for p in self.providers:
            if p.id == provider_id:
                return p
        raise KeyError(f"no simulated provider {provider_id!r}")
