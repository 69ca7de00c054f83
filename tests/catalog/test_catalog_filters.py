"""Normalization, the non-chat deny table, declared types, the twin rule and selectors."""

from __future__ import annotations

import re

import pytest

from modelpool.catalog import (
    NON_CHAT_PATTERNS,
    compile_patterns,
    glob_match,
    is_chat_by_declared_type,
    is_chat_model,
    is_non_chat,
    is_twin_provider,
    matches_selector,
    non_chat_family,
    normalize_model_id,
    twin_source,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("deepseek/deepseek-v4.1-flash", "deepseek-v4.1-flash"),
        ("accounts/fireworks/models/glm-5.3-flash", "glm-5.3-flash"),
        ("Qwen/Qwen3-VL-8B-Instruct", "qwen3-vl-8b-instruct"),
        ("DeepSeek-V4.1-Flash", "deepseek-v4.1-flash"),
        ("  gpt-4o ", "gpt-4o"),
        ("vendor/model/", "model"),
        ("deepseek-v4.1-flash-1017", "deepseek-v4.1-flash-1017"),  # build suffixes are kept
        ("openrouter/model:free", "model:free"),
    ],
)
def test_normalize(raw: str, expected: str) -> None:
    assert normalize_model_id(raw) == expected


CHAT = [
    "Qwen3-VL-8B-Instruct",
    "qwen2.5-vl-72b",
    "Qwen/Qwen2.5-VL-72B-Instruct",
    "deepseek-v4.1-flash",
    "deepseek/deepseek-v4.1-flash-1017",
    "glm-5.3-flash",
    "glm-4.5v",
    "gpt-4o",
    "gpt-4o-audio-preview",
    "gpt-5",
    "o3-mini",
    "claude-sonnet-4.5",
    "kimi-k2",
    "kimi-k2-thinking",
    "gemini-3.1-pro",
    "gemini-2.5-flash-image",
    "qwen-vision-chat",
    "llama-3.1-nemotron-70b-instruct",
    "gpt-oss-120b",
    "qwq-32b",
    "minimax-m2",
    "hunyuan-t1",
    "ernie-4.5-300b-a47b",
    "mistral-large-latest",
    "pixtral-large",
    "command-r-plus",
    "qwen3-omni-30b-a3b",
    "gemma-3-27b-it",
    "THUDM/GLM-Z1-9B-0414",
    "sparkling-chat-7b",
    "socratic-lm",
]

NON_CHAT = [
    "Z-Image-Turbo",
    "Tongyi-MAI/Z-Image-Turbo",
    "text-embedding-3-large",
    "BAAI/bge-m3",
    "bge-reranker-v2-m3",
    "whisper-large-v3",
    "FLUX.1-schnell",
    "black-forest-labs/flux-kontext-pro",
    "omni-moderation-latest",
    "text-moderation-latest",
    "tts-1",
    "tts-1-hd",
    "gpt-4o-mini-tts",
    "gpt-4o-transcribe",
    "gpt-realtime",
    "Qwen/Qwen3-Embedding-8B",
    "nomic-embed-text",
    "intfloat/multilingual-e5-large",
    "e5-mistral-7b-instruct",
    "gte-Qwen2-7B-instruct",
    "voyage-3-large",
    "jina-reranker-m0",
    "rerank-english-v3.0",
    "FunAudioLLM/SenseVoiceSmall",
    "FunAudioLLM/CosyVoice2-0.5B",
    "fishaudio/fish-speech-1.5",
    "IndexTeam/IndexTTS-2",
    "qwen3-asr-flash",
    "deepseek-ocr",
    "deepseek-ocr-chat",  # decision: OCR stays denied whatever its wire suffix (see filters.py)
    "mistral-ocr-latest",
    "stabilityai/stable-diffusion-3.5-large",
    "sdxl-turbo",
    "dall-e-3",
    "gpt-image-1",
    "Kwai-Kolors/Kolors",
    "Qwen/Qwen-Image",
    "imagen-4.0-generate-001",
    "Wan-AI/Wan2.2-T2V-A14B",
    "Wan-AI/Wan2.1-I2V-14B-720P",
    "tencent/HunyuanVideo",
    "veo-3.0-generate-preview",
    "sora-2",
    "kling-v2",
    "meta-llama/Llama-Guard-3-8B",
    "google/shieldgemma-2b",
    "Qwen3Guard-Gen-8B",
    "nvidia/llama-3.1-nemotron-70b-reward",
    "Qwen/Qwen2.5-Math-PRM-7B",
]


@pytest.mark.parametrize("model_id", CHAT)
def test_chat_models_pass_the_table(model_id: str) -> None:
    assert not is_non_chat(model_id), non_chat_family(model_id)


@pytest.mark.parametrize("model_id", NON_CHAT)
def test_non_chat_models_are_denied(model_id: str) -> None:
    assert is_non_chat(model_id)


def test_families_are_named() -> None:
    assert non_chat_family("bge-m3") == "embedding"
    assert non_chat_family("bge-reranker-v2-m3") == "embedding"  # bge- wins first; still denied
    assert non_chat_family("jina-reranker-m0") == "reranker"
    assert non_chat_family("whisper-1") == "speech"
    assert non_chat_family("Z-Image-Turbo") == "image-generation"
    assert non_chat_family("llama-guard-4") == "moderation"
    assert non_chat_family("gpt-4o") is None
    assert {family for family, _ in NON_CHAT_PATTERNS} >= {"embedding", "speech", "ocr", "judge"}


def test_extra_patterns_and_invalid_ones() -> None:
    compiled, invalid = compile_patterns(["^acme-", "(unclosed", "Special"])
    assert invalid == ["(unclosed"]
    assert len(compiled) == 2
    assert non_chat_family("acme-chat", compiled) == "extra"
    assert non_chat_family("vendor/SPECIAL-1", compiled) == "extra"  # case-insensitive
    assert is_non_chat("acme-chat", ["^acme-", "(unclosed"])
    assert not is_non_chat("gpt-4o", ["(unclosed"])
    assert is_non_chat("acme-1", [re.compile("acme")])


@pytest.mark.parametrize(
    ("declared", "expected"),
    [
        ("language", True),
        ("Language", True),
        ("embedding", False),
        ("reranking", False),
        ("image", False),
        ("video", False),
        ("transcription", False),
        ("speech", False),
        ("realtime", False),
        ("text->text", True),
        ("text+image->text", True),
        ("text→text", True),
        ("text->image", False),
        ("text+image->text+image", True),
        ("text->audio", False),
        (None, None),
        ("", None),
        ("something-new", None),
    ],
)
def test_declared_type(declared: str | None, expected: bool | None) -> None:
    assert is_chat_by_declared_type(declared) is expected


def test_declared_type_wins_over_the_name() -> None:
    assert is_chat_model("odd-embed-named-chat", "language")
    assert not is_chat_model("gpt-4o", "embedding")
    assert not is_chat_model("text-embedding-3-large", None)
    assert is_chat_model("gpt-4o", "weird")  # unknown declaration: the name decides


def test_twin_rule() -> None:
    suffixes = ["-vision"]
    assert is_twin_provider("amd-vision", suffixes)
    assert is_twin_provider("AMD-Vision", suffixes)
    assert twin_source("amd-vision", suffixes) == "amd"
    assert twin_source("siliconflow-vision", ["-vision", "-img"]) == "siliconflow"
    assert not is_twin_provider("amd", suffixes)
    assert not is_twin_provider("visionary", suffixes)
    assert not is_twin_provider("-vision", suffixes)  # only the suffix: wraps nothing
    assert twin_source("amd", suffixes) is None
    assert not is_twin_provider("amd-vision", [])
    assert twin_source("x-hd-vision", ["-vision", "-hd-vision"]) == "x"  # longest suffix


@pytest.mark.parametrize(
    ("pattern", "value", "expected"),
    [
        ("deepseek-v4.1-flash*", "deepseek-v4.1-flash-1017", True),
        ("deepseek-v4.1-flash*", "deepseek-v4.1-flash", True),
        ("deepseek-v4.1-flash*", "deepseek-v4-1-flash", False),  # `.` is literal
        ("glm-?.3*", "GLM-5.3-Flash", True),
        ("glm-?.3*", "glm-55.3", False),
        ("vercel/*", "vercel/deepseek/deepseek-v4.1-flash", True),  # `*` spans `/`
        ("claude-[x]", "claude-[x]", True),  # brackets are literal, unlike fnmatch
        ("gpt-4o", "GPT-4O", True),
        ("gpt-4o", "gpt-4o-mini", False),
    ],
)
def test_glob(pattern: str, value: str, expected: bool) -> None:
    assert glob_match(pattern, value) is expected


def test_selectors() -> None:
    key, model = "vercel/deepseek/deepseek-v4.1-flash-1017", "deepseek/deepseek-v4.1-flash-1017"
    norm = normalize_model_id(model)
    assert matches_selector("deepseek/deepseek-v4.1-flash-1017", key, model, norm)  # concrete id
    assert matches_selector("deepseek-v4.1-flash-1017", key, model, norm)  # normalized id
    assert matches_selector("vercel/deepseek/deepseek-v4.1-flash-1017", key, model, norm)  # route key
    assert matches_selector("deepseek-v4.1-flash*", key, model, norm)  # glob
    assert matches_selector("VERCEL/*", key, model, norm)
    assert not matches_selector("other/deepseek/deepseek-v4.1-flash-1017", key, model, norm)
    assert not matches_selector("deepseek-v4.1-flash", key, model, norm)
    assert not matches_selector("  ", key, model, norm)
