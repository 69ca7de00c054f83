"""Ready-made fleets: the demo (the fastcel example), a small two-route fleet for tests, a bench fleet."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from modelpool.sim.roster_fleet import roster_fleet
from modelpool.sim.scale import scale_fleet
from modelpool.sim.spec import (
    DIALECTS,
    AgentTask,
    Dialect,
    Fault,
    FleetSpec,
    InnerProvider,
    RateLimit,
    SimModel,
    SimProvider,
)

DEMO_MODEL = "deepseek/deepseek-v4.1-flash-1017"

# (name, median tok/s or None for "no recent traffic", median TTFT ms, uptime 15m %, tools)
# The fastcel README: 22 providers, fastest subconscious 394 tok/s, slowest measured runinfra 42,
# the gateway's own pick baseten 175, first-party deepseek 191.
_DEMO_INNER: list[tuple[str, float | None, float | None, float, bool]] = [
    ("subconscious", 394, 310, 100.0, True),
    ("cerebras", 352, 240, 100.0, True),
    ("groq", 318, 205, 84.5, True),  # below min_uptime 90: the ranking demotes it
    ("sambanova", 287, 380, 99.6, True),
    ("fireworks", None, None, 100.0, True),  # null stats
    ("togetherai", 243, 450, 99.9, True),
    ("deepseek", 191, 520, 99.97, True),  # first-party
    ("baseten", 175, 410, 100.0, True),  # the gateway's default pick
    ("deepinfra", 162, 480, 99.8, True),
    ("novita", 148, 560, 100.0, True),
    ("parasail", 131, 600, 99.5, True),
    ("bedrock", 118, 700, 99.9, True),
    ("vertex", 104, 640, 100.0, True),
    ("azure", 97, 690, 99.7, True),
    ("nebius", 88, 720, 99.4, True),
    ("lambda", 79, 760, 98.9, True),
    ("hyperbolic", 71, 810, 99.2, True),
    ("crusoe", 64, 830, 100.0, True),
    ("inference-net", 58, 870, 97.5, True),
    ("chutes", 51, 900, 96.0, False),  # no tools: demoted for tool calls
    ("friendli", 47, 880, 99.1, True),
    ("runinfra", 42, 950, 98.0, True),
]


# SPEC §10 "The demo is a place to try agents": a coding agent asking for a file gets it written (the
# file its prompt names, by the best write tool it offers), then a short answer; other calls as before.
DEMO_AGENT = AgentTask(path=None)
# USD per 1M tokens, so the demo's Usage page shows spend (SPEC §14); the first-party route has DeepSeek's
# kind of peak / off-peak prices (§7 decides the period), the aggregator a markup, the reseller a discount.
_DEMO_PRICES: dict[str, dict[str, Any]] = {
    "vercel": {"input": 0.30, "cached_input": 0.08, "output": 1.20},
    "deepseek": {
        "peak": {"input": 0.28, "cached_input": 0.028, "output": 1.10},
        "off_peak": {"input": 0.14, "cached_input": 0.014, "output": 0.55},
    },
    "workbuddy": {"input": 0.20, "cached_input": 0.05, "output": 0.80},
}


def _demo_model(model_id: str) -> SimModel:
    return SimModel(
        model_id,
        reasoning_tokens=12,
        output_tokens=96,
        context_window=1_000_000,
        efforts=["off", "high", "max"],
        agent=DEMO_AGENT,
    )


def demo_fleet() -> FleetSpec:
    """One model on a Vercel-like aggregator with 22 inner providers (42–394 tok/s), plus a first-party
    route (`deepseek/deepseek-flash`) and a third-party one (`workbuddy/deepseek-v4.1-flash`), with
    realistic TTFTs and occasional faults so the dashboard has switches and rests to show. Dialects
    (SPEC §1.6): the aggregator speaks all three, the first-party route Chat Completions and Anthropic
    Messages (like DeepSeek), the third-party route Chat Completions only."""
    inner = [
        InnerProvider(name, tps=tps, ttft_ms=ttft, uptime_15m=up, tools=tools)
        for name, tps, ttft, up, tools in _DEMO_INNER
    ]
    vercel = SimProvider(
        "vercel",
        kind="vercel",
        name="Vercel AI Gateway",
        models=[_demo_model(DEMO_MODEL)],
        ttft=0.5,
        tps=150.0,  # used by inner providers without published figures
        inner=inner,
        default_inner="baseten",
        affinity_ttl=300.0,
        prices=_DEMO_PRICES["vercel"],
        faults=[
            Fault("server_error", probability=0.05, inner="runinfra", status=503),
            Fault("rate_limit", probability=0.05, inner="groq", retry_after=2.0),
        ],
    )
    deepseek = SimProvider(
        "deepseek",
        name="DeepSeek",
        dialects=("openai", "anthropic"),
        models=[_demo_model("deepseek-flash")],
        ttft=0.35,
        tps=191.0,
        prices=_DEMO_PRICES["deepseek"],
        faults=[
            Fault("rate_limit", probability=0.04, retry_after=1.0),
            Fault("cut", probability=0.01, after_tokens=20),
        ],
    )
    workbuddy = SimProvider(
        "workbuddy",
        name="WorkBuddy",
        dialects=("openai",),
        models=[_demo_model("deepseek-v4.1-flash")],
        ttft=0.7,
        tps=120.0,
        prices=_DEMO_PRICES["workbuddy"],
        faults=[
            Fault("server_error", probability=0.04, status=503),
            Fault("stall", probability=0.02, delay=4.0),
        ],
    )
    return FleetSpec([vercel, deepseek, workbuddy], seed=7)


def two_route_fleet() -> FleetSpec:
    """Two OpenAI-compatible providers `alpha` and `beta` serving `m1` quickly (tests)."""
    return FleetSpec(
        [
            SimProvider("alpha", models=[SimModel("m1")], ttft=0.01, tps=2000.0),
            SimProvider("beta", models=[SimModel("m1")], ttft=0.01, tps=2000.0),
        ]
    )


# Bench models besides `m1` (24 tokens): 200-token replies in one write (`m200`), the same paced at
# 50 tok/s like a real model, one token per upstream read, 4 s per stream (`m200-paced`: 256 of them in
# flight stay within a small machine's CPU), and a stream that stays open for minutes at 2 tok/s (`slow`,
# bench/memory.py's 1,000 open streams). Fast mode keeps model-level pacing.
BENCH_MODELS = (
    ("m200", 200, None),
    ("m200-paced", 200, 50.0),
    ("slow", 600, 2.0),
)


def _bench_models() -> list[SimModel]:
    extra = [
        SimModel(mid, output_tokens=n, tps=tps, ttft=0.0 if tps else None) for mid, n, tps in BENCH_MODELS
    ]
    return [SimModel("m1"), *extra]


def bench_fleet(route_dialects: tuple[Dialect, ...] | None = None) -> FleetSpec:
    """Fast mode (no sleeps): two OpenAI routes, an Anthropic route, a small aggregator and (last, so the
    others keep their places) `omni`, a route speaking all three dialects natively with the bench models.

    `route_dialects` declares what `alpha` and `beta` speak (None: Chat Completions only, their kind's
    default)."""
    inner = [
        InnerProvider("fast", tps=400, ttft_ms=200),
        InnerProvider("mid", tps=200, ttft_ms=400),
        InnerProvider("slow", tps=50, ttft_ms=900),
    ]
    return FleetSpec(
        [
            SimProvider("alpha", models=_bench_models(), dialects=route_dialects),
            SimProvider("beta", models=_bench_models(), dialects=route_dialects),
            SimProvider("anthro", kind="anthropic", models=_bench_models()),
            SimProvider(
                "vercel", kind="vercel", models=[SimModel(DEMO_MODEL)], inner=inner, default_inner="mid"
            ),
            SimProvider("omni", dialects=("openai", "anthropic", "responses"), models=_bench_models()),
        ],
        fast=True,
    )


def bench_native_fleet() -> FleetSpec:
    """The bench fleet with `alpha` and `beta` speaking every dialect natively (SPEC §1.6), like an
    OpenAI-style upstream that also serves `/v1/messages`, `/v1/responses` and the Gemini API's
    `/v1/models/{m}:streamGenerateContent`: what bench/overhead.py measures the native Chat, Messages,
    Responses and Gemini relays (and their direct baselines) against."""
    return bench_fleet(route_dialects=(*DIALECTS, "gemini"))


def heavy_tail_fleet() -> FleetSpec:
    """bench/hedge.py (SPEC §3.7): three OpenAI routes serving `m1` at 50 ms to the first token, each
    stalling every tenth of its calls for 3 s before its first byte (bench/hedge.py `--random` draws a
    tenth at random instead, through the control API)."""
    stall = Fault("stall", every=10, delay=3.0)
    return FleetSpec(
        [
            SimProvider(pid, models=[SimModel("m1", output_tokens=20)], ttft=0.05, tps=400.0, faults=[stall])
            for pid in ("alpha", "beta", "gamma")
        ],
        seed=18,
    )


DRIFT_SPEEDS = {"p1": 300.0, "p2": 200.0, "p3": 100.0, "p4": 150.0}  # tok/s at the start of bench/drift.py


def drift_fleet() -> FleetSpec:
    """bench/drift.py: four OpenAI routes serving `m1` (60 tokens) at different speeds; the benchmark
    changes their speeds on a schedule through `POST /_sim/speed`."""
    return FleetSpec(
        [
            SimProvider(pid, models=[SimModel("m1", output_tokens=60)], ttft=0.05, tps=tps)
            for pid, tps in DRIFT_SPEEDS.items()
        ],
        seed=18,
    )


QUOTA_WINDOW = 10.0  # seconds: bench/quota.py's rate-limit window


def quota_fleet(limited: bool = True) -> FleetSpec:
    """bench/quota.py (SPEC §3.8): three routes serving `m1`, each announcing a small limit of 100 requests
    per 10 s window and key (10 calls/s; 30 together): `alpha` and `beta` with OpenAI's `x-ratelimit-*`
    headers (`beta` also 6,000 tokens a window), `gamma` a Messages route with Anthropic's.
    `limited=False` (`--preset quota-free`): the same routes with no limit at all, the reference."""
    if not limited:
        spec = quota_fleet()
        for p in spec.providers:
            p.rate_limit = None
        return spec
    model = SimModel("m1", output_tokens=12)
    return FleetSpec(
        [
            SimProvider(
                "alpha", models=[model], ttft=0.01, tps=2000.0, rate_limit=RateLimit(100, None, QUOTA_WINDOW)
            ),
            SimProvider(
                "beta", models=[model], ttft=0.01, tps=2000.0, rate_limit=RateLimit(100, 6000, QUOTA_WINDOW)
            ),
            SimProvider(
                "gamma",
                kind="anthropic",
                models=[model],
                ttft=0.01,
                tps=2000.0,
                rate_limit=RateLimit(100, None, QUOTA_WINDOW, style="anthropic"),
            ),
        ],
        seed=28,
    )


AGENT_MODEL = "agent-1"


def agent_fleet(task: AgentTask | None = None, model_id: str = AGENT_MODEL) -> FleetSpec:
    """The scripted agent (SPEC §10) on one route per dialect mix, for the real-CLI tests: `chatonly`
    (Chat Completions), `anthropic` (Messages), `responses` (OpenAI-style: Chat + Responses), `firstparty`
    (Chat + Messages, like DeepSeek) and a `vercel` aggregator speaking all three. Quick, no faults."""
    task = task or AgentTask()

    def route(provider_id: str, **kwargs: Any) -> SimProvider:
        model = SimModel(model_id, agent=task, output_tokens=8)
        return SimProvider(provider_id, models=[model], ttft=0.01, tps=2000.0, **kwargs)

    inner = [InnerProvider("alpha", tps=400, ttft_ms=10), InnerProvider("beta", tps=300, ttft_ms=10)]
    return FleetSpec(
        [
            route("chatonly"),
            route("anthropic", kind="anthropic"),
            route("responses", dialects=("openai", "responses")),
            route("firstparty", dialects=("openai", "anthropic")),
            route("vercel", kind="vercel", inner=inner, default_inner="alpha"),
        ]
    )


PRESETS: dict[str, Callable[[], FleetSpec]] = {
    "demo": demo_fleet,
    "two-route": two_route_fleet,
    "bench": bench_fleet,
    "bench-native": bench_native_fleet,
    "agent": agent_fleet,
    "heavy-tail": heavy_tail_fleet,
    "drift": drift_fleet,
    "quota": quota_fleet,  # SPEC §3.8: small announced rate limits (bench/quota.py)
    "quota-free": lambda: quota_fleet(limited=False),  # the same routes without limits (its reference)
    "roster": roster_fleet,  # 906 roster rows, the rotator seed's live scan (issue #21)
    "scale": scale_fleet,  # issue #21: 50 providers × 200 models (sim/scale.py)
}


def preset(name: str) -> FleetSpec:
    try:
        return PRESETS[name.replace("_", "-")]()
    except KeyError:
        raise KeyError(f"unknown sim preset {name!r}; choose one of {sorted(PRESETS)}") from None
