"""Vocabulary shared by every translator: stop reasons, usage, ids (streaming.md §4.3).

Usage travels between dialects in one normalized flat dict so each translator converts once on the
way in and once on the way out:

    {"prompt_tokens", "completion_tokens", "total_tokens",   # OpenAI meaning: prompt counts cached input
     "cached_tokens", "cache_creation_tokens", "reasoning_tokens"}
"""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import orjson

from modelpool.protocols.errors import ClientError

F = TypeVar("F", bound=Callable[..., Any])


def client_shape_errors(fn: F) -> F:
    """A request translator's safety net: a body whose shape is wrong in a way the checks and the
    translator did not name (a string where a list belongs, …) is the client's 400, never a 500."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (AttributeError, TypeError, KeyError, ValueError, IndexError) as exc:
            raise ClientError(400, f"malformed request body: {type(exc).__name__}: {exc}") from None

    return wrapper  # type: ignore[return-value]


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
        "cache_creation_tokens": _int(u.get("cache_creation_input_tokens")),
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
    out: dict[str, Any] = {
        "prompt_tokens": n["prompt_tokens"],
        "completion_tokens": n["completion_tokens"],
        "total_tokens": n["prompt_tokens"] + n["completion_tokens"],
        "prompt_tokens_details": {"cached_tokens": n["cached_tokens"]},
        "completion_tokens_details": {"reasoning_tokens": n["reasoning_tokens"]},
    }
    if n["cache_creation_tokens"]:
        # No OpenAI field for cache writes; LiteLLM's name keeps them across a round trip.
        out["cache_creation_input_tokens"] = n["cache_creation_tokens"]
    return out


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


# Thinking blocks (with Anthropic signatures) ride on OpenAI-shaped messages and deltas in this side
# field, as LiteLLM does, next to the plain-text `reasoning_content`.
SIDE_FIELD = "thinking_blocks"
RAW_ARGS_KEY = "_raw_arguments"  # tool_use input wrapping arguments that were not a JSON object


def parse_arguments(arguments: Any) -> dict[str, Any]:
    """OpenAI `function.arguments` (a JSON string) → Anthropic `input` (an object), never raising."""
    if isinstance(arguments, dict):
        return arguments
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, str):
        try:
            value = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return {RAW_ARGS_KEY: arguments}
        return value if isinstance(value, dict) else {RAW_ARGS_KEY: arguments}
    return {RAW_ARGS_KEY: orjson.dumps(arguments).decode()}


def dump_arguments(value: Any) -> str:
    """Anthropic `input` → OpenAI `arguments`; undoes the wrapping of `parse_arguments`."""
    if isinstance(value, dict) and len(value) == 1 and isinstance(value.get(RAW_ARGS_KEY), str):
        return value[RAW_ARGS_KEY]  # type: ignore[no-any-return]
    return orjson.dumps(value if value is not None else {}).decode()


def fill_reasoning_content(messages: list[dict[str, Any]]) -> None:
    """DeepSeek: once a conversation has reasoning, every assistant turn with tool calls must send its
    `reasoning_content` back (400 otherwise). A turn whose reasoning the client did not keep gets ""."""
    if any("reasoning_content" in m for m in messages):
        for m in messages:
            if m.get("role") == "assistant" and m.get("tool_calls"):
                m.setdefault("reasoning_content", "")
