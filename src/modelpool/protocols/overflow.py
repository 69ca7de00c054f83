"""Context overflow in each dialect's own words (SPEC §1.7), and an upstream's overflow recognised.

The agent CLIs act on the wording, not on a status: Claude Code compacts on an Anthropic
`invalid_request_error` whose message starts "prompt is too long", Codex on OpenAI's
`context_length_exceeded` code, Gemini CLI on "The input token count (N) exceeds the maximum number of
tokens allowed (M)". modelpool answers with those whether it refuses a request itself (too long for every
route of the pool) or an upstream refused it in its own words (llama.cpp, OpenAI, DeepSeek, Anthropic…),
on a native attempt or a translated one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import orjson

from modelpool.protocols.errors import ClientError

# (pattern, which group is the prompt's size N, which is the maximum M)
_WITH_NUMBERS: tuple[tuple[re.Pattern[str], int, int], ...] = (
    (re.compile(r"prompt is too long: (\d+) tokens > (\d+) maximum"), 1, 2),  # Anthropic
    # OpenAI and DeepSeek: "maximum context length is M tokens. However, your messages resulted in N
    # tokens" / "However, you requested N tokens (…)"
    (
        re.compile(r"maximum context length is (\d+) tokens.{0,80}?(?:resulted in|requested) (\d+)", re.S),
        2,
        1,
    ),
    # llama.cpp's llama-server
    (re.compile(r"request \((\d+) tokens\) exceeds the available context size \((\d+) tokens\)"), 1, 2),
    # Gemini
    (re.compile(r"input token count \((\d+)\) exceeds the maximum number of tokens allowed \((\d+)\)"), 1, 2),
)
_WORDS = re.compile(
    r"context_length_exceeded|exceed_context_size|maximum context length|prompt is too long"
    r"|exceeds the (?:available )?context (?:size|window)|input token count|上下文长度"
)
_MAX_SCAN = 4000  # an overflow message is short; a huge error page is not one


@dataclass(frozen=True, slots=True)
class Overflow:
    """A prompt too long for the model: N tokens (estimated or counted) over a window of M."""

    tokens: int | None
    maximum: int | None


class ContextOverflow(ClientError):
    """Refused before any upstream attempt: the request is over every reachable route's window."""

    def __init__(self, tokens: int, maximum: int) -> None:
        super().__init__(400, f"prompt is too long: {tokens} tokens > {maximum} maximum")
        self.tokens, self.maximum = tokens, maximum


def parse_overflow(text: str) -> Overflow | None:
    """The overflow an upstream error text reports (with its numbers when it gives them), or None."""
    head = text[:_MAX_SCAN]
    for pattern, n, m in _WITH_NUMBERS:
        found = pattern.search(head)
        if found:
            return Overflow(int(found.group(n)), int(found.group(m)))
    if _WORDS.search(head.lower()):
        return Overflow(None, None)
    return None


def overflow_body(dialect: str, tokens: int, maximum: int) -> bytes:
    """The 400 body a client of `dialect` acts on (OpenAI's wording for Chat and Responses)."""
    if dialect == "anthropic":
        message = f"prompt is too long: {tokens} tokens > {maximum} maximum"
        return orjson.dumps({"type": "error", "error": {"type": "invalid_request_error", "message": message}})
    if dialect == "gemini":
        message = (
            f"The input token count ({tokens}) exceeds the maximum number of tokens allowed ({maximum})."
        )
        return orjson.dumps({"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}})
    message = (
        f"This model's maximum context length is {maximum} tokens. However, your messages resulted in "
        f"{tokens} tokens. Please reduce the length of the messages."
    )
    param = "input" if dialect == "responses" else "messages"
    error = {
        "message": message,
        "type": "invalid_request_error",
        "param": param,
        "code": "context_length_exceeded",
    }
    return orjson.dumps({"error": error})


def already_said(dialect: str, body: bytes) -> bool:
    """Whether an upstream's overflow body is already in the words a client of `dialect` acts on."""
    try:
        error = orjson.loads(body).get("error")
    except (orjson.JSONDecodeError, AttributeError):
        return False
    if not isinstance(error, dict):
        return False
    if dialect == "anthropic":
        return str(error.get("message", "")).startswith("prompt is too long: ")
    if dialect == "gemini":
        return "exceeds the maximum number of tokens allowed" in str(error.get("message", ""))
    return error.get("code") == "context_length_exceeded"


def fill(found: Overflow, estimate: int, window: int | None) -> tuple[int, int]:
    """N and M for the client's wording when the upstream left one out: M is the route's window (else the
    upstream's), N the upstream's count, else modelpool's estimate — never shown below M + 1, since the
    upstream did say the prompt was over."""
    maximum = found.maximum or window or estimate
    tokens = found.tokens if found.tokens is not None else estimate
    return max(tokens, maximum + 1) if found.tokens is None else tokens, maximum
