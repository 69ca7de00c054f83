"""A provider-side prompt cache as Anthropic runs one (SPEC §3.11, §10): only what the request marks with
`cache_control` is cached, as a prefix up to each breakpoint, for five minutes since its last use.

A call reads the longest cached prefix it finds (`cache_read_input_tokens`) and writes the rest up to its
last breakpoint (`cache_creation_input_tokens`). Like Anthropic, a breakpoint also finds a prefix cached at
any of the `LOOKBACK` block boundaries before it: last turn's marked end is this turn's hit, although this
turn marks its own new end. Token counts are the sim's estimate (a quarter of the
JSON's characters), capped at the request's own prompt tokens so usage stays consistent.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

import orjson

TTL = 300.0
LOOKBACK = 20  # block boundaries a breakpoint looks back for a cached prefix (Anthropic: about 20)


def _pieces(body: dict[str, Any]) -> list[tuple[bytes, bool]]:
    """The request's cacheable parts in Anthropic's order — tools, system, messages — each with whether a
    breakpoint follows it."""
    out: list[tuple[bytes, bool]] = []
    for tool in body.get("tools") or []:
        if isinstance(tool, dict):
            out.append(
                (
                    orjson.dumps({k: v for k, v in tool.items() if k != "cache_control"}),
                    "cache_control" in tool,
                )
            )
    system = body.get("system")
    blocks = [{"type": "text", "text": system}] if isinstance(system, str) else system or []
    for block in blocks:
        if isinstance(block, dict):
            out.append((orjson.dumps(block.get("text", "")), "cache_control" in block))
    for msg in body.get("messages") or []:
        content = msg.get("content") if isinstance(msg, dict) else None
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for part in parts:
            if isinstance(part, dict):
                clean = {k: v for k, v in part.items() if k != "cache_control"}
                out.append((msg.get("role", "").encode() + orjson.dumps(clean), "cache_control" in part))
    return out


class PromptCache:
    def __init__(self, ttl: float = TTL) -> None:
        self.ttl = ttl
        self._prefixes: dict[bytes, float] = {}  # digest of a marked prefix → last use

    def account(self, body: dict[str, Any], prompt_tokens: int, now: float | None = None) -> tuple[int, int]:
        """(cached read, cache write) tokens of this request; remembers its marked prefixes."""
        now = time.monotonic() if now is None else now
        digest = hashlib.sha256()
        tokens = 0
        read = last_mark = 0
        marks: list[bytes] = []
        boundaries: list[tuple[bytes, int]] = []  # (digest of the prefix, its tokens) at each block's end
        for piece, mark in _pieces(body):
            digest.update(piece)
            tokens += max(1, len(piece) // 4)
            boundaries.append((digest.copy().digest(), tokens))
            if mark:
                marks.append(boundaries[-1][0])
                last_mark = tokens
                for key, upto in reversed(boundaries[-LOOKBACK - 1 :]):
                    seen = self._prefixes.get(key)
                    if seen is not None and now - seen <= self.ttl:
                        read = max(read, upto)
                        break
        for key in marks:
            self._prefixes[key] = now
        if len(self._prefixes) > 10_000:  # a bounded memory for long benchmarks
            self._prefixes = {k: t for k, t in self._prefixes.items() if now - t <= self.ttl}
        read = min(read, prompt_tokens)
        return read, min(max(0, last_mark - read), prompt_tokens - read)
