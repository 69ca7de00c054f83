"""Deterministic reply text, so tests can assert exact answers and spot duplication or splicing.

Scheme: a reply of n content tokens from provider P serving model M is
``"[P:M] tok0 tok1 … tok{n-1}"`` — token 0 is ``"[P:M] tok0"``, token i>0 is ``" tok{i}"``. Every token
is unique within a reply and the tag names who answered, so a duplicated token, a reply spliced from two
attempts or a reply from the wrong route is visible in the text. Reasoning uses the same shape with
``think{i}``. A tool call names the request's first tool with arguments ``{"source":"P:M","ok":true}``.
"""

from __future__ import annotations

from functools import lru_cache

import orjson


def tag(provider_id: str, model_id: str) -> str:
    return f"[{provider_id}:{model_id}]"


@lru_cache(maxsize=512)
def content_tokens(provider_id: str, model_id: str, n: int) -> tuple[str, ...]:
    return _tokens(tag(provider_id, model_id), "tok", n)


@lru_cache(maxsize=512)
def reasoning_tokens(provider_id: str, model_id: str, n: int) -> tuple[str, ...]:
    return _tokens(tag(provider_id, model_id), "think", n)


def _tokens(prefix: str, word: str, n: int) -> tuple[str, ...]:
    return tuple(f"{prefix} {word}{i}" if i == 0 else f" {word}{i}" for i in range(n))


def expected_text(provider_id: str, model_id: str, n: int) -> str:
    """The full answer text of an n-token reply from `provider_id` serving `model_id`."""
    return "".join(content_tokens(provider_id, model_id, n))


def expected_reasoning(provider_id: str, model_id: str, n: int) -> str:
    """The full reasoning text of an n-token reasoning phase."""
    return "".join(reasoning_tokens(provider_id, model_id, n))


def expected_tool_arguments(provider_id: str, model_id: str) -> str:
    """The JSON argument string of the simulated tool call (compact, stable key order)."""
    return orjson.dumps({"source": f"{provider_id}:{model_id}", "ok": True}).decode()


@lru_cache(maxsize=512)
def tool_argument_fragments(provider_id: str, model_id: str) -> tuple[str, ...]:
    """The arguments cut in three pieces, streamed like real providers do (invalid JSON until the end)."""
    args = expected_tool_arguments(provider_id, model_id)
    third = max(1, len(args) // 3)
    return (args[:third], args[third : 2 * third], args[2 * third :])


def split_fragments(text: str, pieces: int = 3) -> tuple[str, ...]:
    """A tool call's arguments (or a custom tool's input) cut in pieces, as streams deliver them."""
    if not text:
        return ()
    size = max(1, -(-len(text) // pieces))
    return tuple(text[i : i + size] for i in range(0, len(text), size))


def words(text: str) -> tuple[str, ...]:
    """A fixed text as stream tokens: each word with the space before it."""
    out: list[str] = []
    for i, word in enumerate(text.split(" ")):
        out.append(word if i == 0 else " " + word)
    return tuple(t for t in out if t)
