"""Declarative description of a simulated fleet: plain dataclasses, easy to build in tests.

A `FleetSpec` lists `SimProvider`s (one HTTP server each); a provider serves `SimModel`s in the dialects
it speaks (`dialects`) and may carry scripted `Fault`s. Aggregator providers (kind "vercel") also list
`InnerProvider`s whose speed decides how fast a call streams and whose figures are published as endpoint
stats.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal, get_args

ProviderKind = Literal["openai", "anthropic", "vercel", "gemini"]
# Chat Completions, Messages, Responses, the Gemini API (SPEC §1.6)
Dialect = Literal["openai", "anthropic", "responses", "gemini"]
DIALECTS: tuple[Dialect, ...] = ("openai", "anthropic", "responses")
# What a kind speaks unless `SimProvider.dialects` says otherwise (the same defaults as modelpool's config).
KIND_DIALECTS: dict[str, tuple[Dialect, ...]] = {
    "openai": ("openai",),
    "anthropic": ("anthropic",),
    "vercel": DIALECTS,
    "gemini": ("gemini", "openai"),  # the OpenAI dialect at /v1beta/openai
}

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
class TtftTail:
    """Heavy-tailed time to first byte: a `share` of calls (seeded draw) stall `seconds` before any
    response byte, then answer normally — the slow outliers hedging (SPEC §3.7) is for."""

    share: float
    seconds: float

    def __post_init__(self) -> None:
        if not 0.0 <= self.share <= 1.0 or self.seconds < 0:
            raise ValueError("TtftTail needs 0 <= share <= 1 and seconds >= 0")


# Speeds that change on a schedule: [(t_seconds since the fleet started, tokens_per_s), ...]; the last
# entry whose time has come applies (before the first, the configured speed). For drift benchmarks.
Schedule = list[tuple[float, float]]


def scheduled_tps(schedule: Schedule | None, elapsed: float, default: float | None) -> float | None:
    current = default
    for at, tps in sorted(schedule or []):
        if at > elapsed:
            break
        current = tps
    return current


# A file name in a prompt ("create hello.txt", "write notes/todo.md"): a relative path ending in an extension.
_FILE_IN_PROMPT = re.compile(r"(?<![\w/.-])((?:[\w-]+/)*[\w-]+\.[A-Za-z0-9]{1,8})(?![\w/-])")
# What it should hold: "containing [the line|text]: …", "with the (text|content|line) …", "that says …".
_CONTENT_IN_PROMPT = re.compile(
    r"(?:containing|with the (?:text|content|line|words)|that says)(?: the (?:line|text|words))?:?\s+(.+)",
    re.IGNORECASE | re.DOTALL,
)


@dataclass
class AgentTask:
    """A small agent task a model is scripted to do (SPEC §10): write `content` to `path`.

    A model with `agent` set answers a turn that is not a tool result with a call of the best file-writing
    tool the request offers (a `Write`-like function, `apply_patch` as a custom or function tool,
    `local_shell`, a `shell`/`exec_command` function), and a turn that is a tool result with `done`.
    """

    path: str | None = "hello.txt"  # None: the file the user's prompt names (the demo, `for_prompt`)
    content: str = "hello from modelpool\n"
    done: str | None = None  # the closing text; default "Done: wrote <path>"
    # An edit of an existing file: these lines become `content` (Codex's `apply_patch` gets an
    # `*** Update File` hunk; a Write-like tool writes the whole new content).
    replaces: str | None = None

    def for_prompt(self, texts: list[str]) -> AgentTask | None:
        """This task for a conversation whose user turns are `texts`: as it is when it names its file,
        else the file the latest prompt names (and what it should contain, when it says), or None when
        no prompt names a file — the model then answers like any other."""
        if self.path is not None:
            return self
        for text in reversed(texts):
            if text.lstrip().startswith("<"):  # a CLI's own context block (system reminder, environment)
                continue
            found = _FILE_IN_PROMPT.search(text)
            if found is None:
                continue
            said = _CONTENT_IN_PROMPT.search(text[found.end() :])
            content = said.group(1).strip().strip("\"'“”") + "\n" if said else self.content
            return AgentTask(path=found.group(1), content=content, done=self.done, replaces=self.replaces)
        return None

    @property
    def file(self) -> str:
        """The file to write (a task from `for_prompt`, or one made with its path, always has one)."""
        if self.path is None:
            raise ValueError("an AgentTask without a path writes no file: resolve it with for_prompt()")
        return self.path

    @property
    def done_text(self) -> str:
        return self.done if self.done is not None else f"Done: wrote {self.path}"


@dataclass
class SimModel:
    """A model a provider serves. `None` speed/timing fields inherit the provider's.

    Scripted extras: `agent` (an `AgentTask`, see there); `web_search` — when the request offers a web
    search server tool, the reply first searches (Anthropic `server_tool_use` + `web_search_tool_result`,
    Responses `web_search_call`) and its text cites the result (`citations_delta` / `url_citation`);
    `cached_tokens` / `cache_creation_tokens` — prompt-cache figures reported in usage in each dialect.
    """

    id: str
    ttft: float | None = None
    tps: float | None = None
    reasoning_tokens: int = 0
    output_tokens: int = 24  # 0: an empty answer (with `reasoning_tokens`, reasoning and no answer text)
    tools: bool = True
    images: bool = False
    context_window: int | None = None
    efforts: list[str] | None = None
    declared_type: str | None = "language"
    agent: AgentTask | None = None
    web_search: bool = False
    cached_tokens: int = 0
    cache_creation_tokens: int = 0
    ttft_tail: TtftTail | None = None  # None: the provider's
    schedule: Schedule | None = None  # tok/s over time (overrides `tps` once the first entry is due)
    # Seconds between two reasoning events (a model thinking at its own pace, SPEC §3.9); None: `tps`.
    reasoning_pace: float | None = None
    # A tool-call reply (not the scripted agent's) calls the first function tool this many times at once,
    # each call with its own id and the same arguments: parallel calls of one function.
    parallel_calls: int = 1


@dataclass
class RateLimit:
    """`requests` / `tokens` per `window` seconds and key (None: that one is not limited); `style` is
    whose headers announce it."""

    requests: int | None = None
    tokens: int | None = None
    window: float = 60.0
    style: Literal["openai", "anthropic"] = "openai"

    def __post_init__(self) -> None:
        if self.window <= 0:
            raise ValueError("RateLimit.window must be > 0")
        if self.style not in ("openai", "anthropic"):
            raise ValueError("RateLimit.style is 'openai' or 'anthropic'")


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
    schedule: Schedule | None = None  # tok/s over time; the published stats follow it


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
    dialects: tuple[Dialect, ...] | None = None  # None: the kind's default (KIND_DIALECTS)
    ttft_tail: TtftTail | None = None  # applies to every model without its own
    schedule: Schedule | None = None  # tok/s over time for models without their own
    # Refuse what the real services refuse: another provider's signed thinking / encrypted reasoning,
    # `context_management` without its beta header (sim/provenance.py).
    strict: bool = True
    # Two habits of llama.cpp's llama-server (issue #25) that a gateway must survive: it drops a kept-alive
    # connection after a few replies without saying so (`keepalive_replies`: the next request on it is met
    # by a closed socket, no byte of an answer), and it ends a stream's body a moment after the
    # terminator event (`end_delay` seconds), so a client may hang up between the two.
    keepalive_replies: int | None = None
    end_delay: float = 0.0
    # And a third: while it loads its weights, every request (its model list too) gets `503 Loading model`
    # for this many seconds after the server starts.
    loading: float = 0.0
    # And a fourth: False makes its Responses stream events carry no `sequence_number`, `output_index` or
    # `content_index` (item events name their item by id only), as llama-server's do.
    responses_positions: bool = True
    # Messages calls cache what their `cache_control` breakpoints mark, as Anthropic does
    # (sim/prompt_cache.py): usage then reports real cache reads and writes, not the model's fixed figures.
    prompt_cache: bool = False
    # False: an OpenAI-compatible server that reports no usage (ignores `stream_options.include_usage`,
    # no `usage` in its bodies) — what the gateway must then estimate (SPEC §14).
    reports_usage: bool = True
    # USD per 1M tokens written into the provider's config entry (`providers[].prices`, SPEC §14): flat
    # `{input, cached_input, cache_write, output}` or per period `{peak: {...}, off_peak: {...}}`.
    prices: dict[str, Any] | None = None
    # Announced limits per key (SPEC §3.8): replies say what is left, a spent window answers 429.
    rate_limit: RateLimit | None = None

    def __post_init__(self) -> None:
        if isinstance(self.rate_limit, dict):
            self.rate_limit = RateLimit(**self.rate_limit)
        if self.dialects is not None:
            unknown = set(self.dialects) - {*DIALECTS, "gemini"}
            if unknown or not self.dialects:
                raise ValueError(f"dialects must be a non-empty subset of {DIALECTS}, got {self.dialects}")
            self.dialects = tuple(self.dialects)

    @property
    def speaks(self) -> tuple[Dialect, ...]:
        """The dialects this provider serves natively (its own or its kind's)."""
        return self.dialects if self.dialects is not None else KIND_DIALECTS[self.kind]

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
