"""Vocabulary shared by every translator: stop reasons, usage, ids (streaming.md §4.3).

Usage travels between dialects in one normalized flat dict so each translator converts once on the
way in and once on the way out:

    {"prompt_tokens", "completion_tokens", "total_tokens",   # OpenAI meaning: prompt counts cached input
     "cached_tokens", "cache_creation_tokens", "reasoning_tokens"}
"""

from __future__ import annotations

import time
import uuid
from typing import Any

# Anthropic stop_reason → OpenAI finish_reason. pause_turn has no equivalent: stop (LiteLLM default).
ANTHROPIC_TO_OPENAI_STOP = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
    "pause_turn": "stop",
}
OPENAI_TO_ANTHROPIC_STOP = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}


def openai_finish(anthropic_reason: str | None) -> str:
    return ANTHROPIC_TO_OPENAI_STOP.get(anthropic_reason or "", "stop")


def anthropic_stop(openai_reason: str | None) -> str:
    return OPENAI_TO_ANTHROPIC_STOP.get(openai_reason or "", "end_turn")


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def empty_usage() -> dict[str, int]:
    return {
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "total_tokens": 0,
        "cached_tokens": 0,
        "cache_creation_tokens": 0,
        "reasoning_tokens": 0,
    }


def usage_from_openai(u: Any) -> dict[str, int] | None:
    if not isinstance(u, dict):
        return None
    prompt, completion = _int(u.get("prompt_tokens")), _int(u.get("completion_tokens"))
    pd, cd = u.get("prompt_tokens_details"), u.get("completion_tokens_details")
    cached = _int(pd.get("cached_tokens")) if isinstance(pd, dict) else 0
    cached = cached or _int(u.get("prompt_cache_hit_tokens"))  # DeepSeek's own field
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": _int(u.get("total_tokens")) or prompt + completion,
        "cached_tokens": cached,
        "cache_creation_tokens": 0,
        "reasoning_tokens": _int(cd.get("reasoning_tokens")) if isinstance(cd, dict) else 0,
    }


def usage_from_anthropic(u: Any, base: dict[str, int] | None = None) -> dict[str, int] | None:
    """Anthropic usage (message_start, message_delta or a message body). message_delta counts are
    cumulative and may omit input fields, so they update `base` rather than replace it."""
    if not isinstance(u, dict):
        return base
    out = dict(base) if base else empty_usage()
    fresh = out["prompt_tokens"] - out["cached_tokens"] - out["cache_creation_tokens"]
    if "input_tokens" in u and u["input_tokens"] is not None:
        fresh = _int(u["input_tokens"])
    if u.get("cache_read_input_tokens") is not None:
        out["cached_tokens"] = _int(u["cache_read_input_tokens"])
    if u.get("cache_creation_input_tokens") is not None:
        out["cache_creation_tokens"] = _int(u["cache_creation_input_tokens"])
    out["prompt_tokens"] = fresh + out["cached_tokens"] + out["cache_creation_tokens"]
    if u.get("output_tokens") is not None:
        out["completion_tokens"] = _int(u["output_tokens"])
    details = u.get("output_tokens_details")
    if isinstance(details, dict):
        out["reasoning_tokens"] = _int(details.get("thinking_tokens") or details.get("reasoning_tokens"))
    out["total_tokens"] = out["prompt_tokens"] + out["completion_tokens"]
    return out


def usage_to_openai(n: dict[str, int]) -> dict[str, Any]:
    return {
        "prompt_tokens": n["prompt_tokens"],
        "completion_tokens": n["completion_tokens"],
        "total_tokens": n["prompt_tokens"] + n["completion_tokens"],
        "prompt_tokens_details": {"cached_tokens": n["cached_tokens"]},
        "completion_tokens_details": {"reasoning_tokens": n["reasoning_tokens"]},
    }


def usage_to_anthropic(n: dict[str, int]) -> dict[str, Any]:
    return {
        "input_tokens": max(0, n["prompt_tokens"] - n["cached_tokens"] - n["cache_creation_tokens"]),
        "cache_creation_input_tokens": n["cache_creation_tokens"],
        "cache_read_input_tokens": n["cached_tokens"],
        "output_tokens": n["completion_tokens"],
    }


def usage_to_responses(n: dict[str, int]) -> dict[str, Any]:
    return {
        "input_tokens": n["prompt_tokens"],
        "input_tokens_details": {
            "cached_tokens": n["cached_tokens"],
            "cache_write_tokens": n["cache_creation_tokens"],
        },
        "output_tokens": n["completion_tokens"],
        "output_tokens_details": {"reasoning_tokens": n["reasoning_tokens"]},
        "total_tokens": n["prompt_tokens"] + n["completion_tokens"],
    }


def new_id(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:24]


def now() -> int:
    return int(time.time())
