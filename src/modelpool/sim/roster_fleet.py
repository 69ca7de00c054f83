"""The `roster` preset: a machine as large as the rotator seed's last live scan (906 roster rows).

The seed's model list showed 453 chat rows over a dozen channels (硅基流动 65, cline 55, …) and as many
`<provider>-vision` twins, one per chat channel wrapping the same models (453 of 906 rows). This fleet
rebuilds that shape with plausible channel names and model ids, so the dashboard's Models roster and the
`GET /admin/models` payload can be exercised at the size a real user sees (issue #21: render and fold
906 rows in ≤ 1 s). Fast mode: it exists to be listed, not to be timed on calls.
"""

from __future__ import annotations

import random

from modelpool.sim.spec import FleetSpec, SimModel, SimProvider

# (provider id, display name, models served): 453 chat rows, as in the seed's live scan.
ROSTER_CHANNELS: list[tuple[str, str, int]] = [
    ("openrouter", "OpenRouter", 80),
    ("siliconflow", "硅基流动", 65),
    ("dashscope", "阿里云百炼", 60),
    ("cline", "Cline", 55),
    ("together", "Together AI", 50),
    ("volcengine", "火山引擎", 40),
    ("amd", "AMD Developer Cloud", 30),
    ("workbuddy", "WorkBuddy", 24),
    ("groq", "Groq", 20),
    ("zhipu", "智谱 AI", 18),
    ("moonshot", "Moonshot AI", 8),
    ("deepseek", "DeepSeek", 3),
]
TWIN_SUFFIX = "-vision"  # the pool's default `twin_suffixes` entry (dsh-vision-router's naming)

# Model families as the channels publish them: vendor path + the sizes/variants each ships.
# fmt: off
_FAMILIES: list[tuple[str, list[str]]] = [
    ("deepseek-ai/deepseek", ["v4-pro", "v4.1-flash", "v4.1-flash-1017", "r2", "r2-distill-qwen-32b",
                              "v3.2-exp", "v3.1-terminus", "coder-v3", "prover-v2"]),
    ("qwen/qwen3", ["0.6b", "1.7b", "4b", "8b", "14b", "32b", "30b-a3b", "235b-a22b", "coder-480b-a35b",
                    "coder-30b-a3b", "vl-8b-instruct", "vl-32b-instruct", "vl-235b-a22b-thinking",
                    "max", "next-80b-a3b-instruct", "next-80b-a3b-thinking", "omni-30b-a3b"]),
    ("qwen/qwen2.5", ["7b-instruct", "14b-instruct", "32b-instruct", "72b-instruct", "coder-32b-instruct",
                      "vl-72b-instruct", "math-72b-instruct"]),
    ("zai-org/glm", ["5.3", "5.3-flash", "5.3-air", "4.6", "4.5v", "4.1v-9b-thinking", "z1-32b", "4-9b"]),
    ("moonshotai/kimi", ["k2.5", "k2-instruct-0905", "k2-thinking", "dev-72b", "vl-a3b-thinking"]),
    ("meta-llama/llama", ["4-maverick-17b-128e", "4-scout-17b-16e", "3.3-70b-instruct",
                          "3.1-8b-instruct", "3.1-405b-instruct", "3.2-90b-vision-instruct"]),
    ("mistralai/mistral", ["large-2411", "medium-3.1", "small-3.2-24b", "nemo-12b", "codestral-2508",
                           "devstral-medium", "magistral-medium-2509", "pixtral-large-2411"]),
    ("google/gemma", ["3-27b-it", "3-12b-it", "3-4b-it", "3n-e4b-it", "2-27b-it"]),
    ("openai/gpt", ["oss-120b", "oss-20b", "5.1", "5.1-mini", "5.1-nano", "4.1", "4.1-mini", "4o"]),
    ("anthropic/claude", ["opus-4.5", "sonnet-4.5", "haiku-4.5", "sonnet-4", "3.7-sonnet"]),
    ("minimax/minimax", ["m2", "m1-80k", "text-01"]),
    ("baidu/ernie", ["4.5-300b-a47b", "4.5-21b-a3b", "x1-turbo", "4.5-vl-424b-a47b"]),
    ("tencent/hunyuan", ["a13b-instruct", "t1", "turbos", "hy3"]),
    ("stepfun-ai/step", ["3", "2-16k", "r1-v-mini"]),
    ("bytedance/doubao", ["seed-1.6", "seed-1.6-flash", "seed-1.6-thinking", "1.5-pro-32k",
                          "1.5-vision-pro", "seed-oss-36b-instruct"]),
    ("nvidia/nemotron", ["ultra-253b-v1", "super-49b-v1.5", "nano-9b-v2"]),
    ("microsoft/phi", ["4", "4-reasoning-plus", "4-multimodal-instruct"]),
    ("cohere/command", ["a-03-2025", "r-plus-08-2024", "r7b-12-2024"]),
    ("xai/grok", ["4", "4-fast", "code-fast-1", "3-mini"]),
    ("inclusionai/ling", ["1t", "flash-2.0", "mini-2.0"]),
    ("thudm/glm", ["4-32b-0414", "z1-rumination-32b"]),
    ("internlm/internlm", ["3-8b-instruct", "s1"]),
    ("ascend-tribe/pangu", ["pro-moe"]),
    ("01-ai/yi", ["lightning", "1.5-34b-chat"]),
]
# fmt: on
MODEL_IDS: list[str] = [f"{vendor}-{variant}" for vendor, variants in _FAMILIES for variant in variants]


def _channel_models(provider_id: str, count: int, rng: random.Random) -> list[str]:
    """`count` ids a channel of this kind would list: aggregators keep the vendor path, first-party and
    Chinese clouds publish bare lowercase ids (which is also how the same model pools across channels)."""
    picked = rng.sample(MODEL_IDS, count)
    if provider_id in ("openrouter", "together", "siliconflow"):
        return picked
    return [m.split("/", 1)[1] for m in picked]


def roster_fleet() -> FleetSpec:
    """12 chat channels with 453 models between them and a `-vision` twin of each: 906 roster rows."""
    rng = random.Random(906)
    providers: list[SimProvider] = []
    twins: list[SimProvider] = []
    for pid, name, count in ROSTER_CHANNELS:
        ids = _channel_models(pid, count, rng)
        providers.append(SimProvider(pid, name=name, models=[SimModel(m) for m in ids]))
        twins.append(
            SimProvider(
                pid + TWIN_SUFFIX, name=f"{name} Vision", models=[SimModel(m, images=True) for m in ids]
            )
        )
    return FleetSpec(providers + twins, fast=True, seed=906)
