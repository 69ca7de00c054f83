"""Announced rate limits (SPEC §10, §3.8): a simulated provider that counts each key's requests and tokens
in a fixed window, says on every reply how much is left (OpenAI's `x-ratelimit-*` or Anthropic's
`anthropic-ratelimit-*` headers) and answers 429 once the window's budget is spent."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from modelpool.sim.errors import SimError
from modelpool.sim.spec import RateLimit


@dataclass
class _Window:
    start: float
    requests: int = 0
    tokens: int = 0


@dataclass
class RateLimiter:
    limit: RateLimit
    clock: object = time.time
    windows: dict[str, _Window] = field(default_factory=dict)
    refused: int = 0  # 429s answered (bench/quota.py reads it through /_sim/info)

    def take(self, key: str, tokens: int) -> dict[str, str]:
        """Count one call of `tokens` for `key`; the headers its reply carries. Raises the 429 (with the
        same headers) when the window has no room for it."""
        now = self.clock()  # type: ignore[operator]
        lim = self.limit
        w = self.windows.get(key)
        if w is None or now >= w.start + lim.window:
            w = self.windows[key] = _Window(now)
        reset = w.start + lim.window
        no_requests = lim.requests is not None and w.requests >= lim.requests
        no_tokens = lim.tokens is not None and w.tokens + tokens > lim.tokens
        if no_requests or no_tokens:
            self.refused += 1
            headers = self._headers(w, reset, now)
            wait = max(0.0, reset - now)
            headers["retry-after"] = str(max(1, math.ceil(wait)))
            what = "requests" if no_requests else "tokens"
            raise SimError(
                429,
                f"Rate limit reached for {what} per window. Please try again later.",
                "requests",
                "rate_limit_exceeded",
                headers,
            )
        w.requests += 1
        w.tokens += tokens
        return self._headers(w, reset, now)

    def _headers(self, w: _Window, reset: float, now: float) -> dict[str, str]:
        lim = self.limit
        out: dict[str, str] = {}
        if lim.style == "anthropic":
            # Whole seconds, as Anthropic sends them: rounded up, never announcing a reset too early.
            moment = datetime.fromtimestamp(math.ceil(reset), UTC)
            stamp = moment.isoformat(timespec="seconds").replace("+00:00", "Z")
            if lim.requests is not None:
                out["anthropic-ratelimit-requests-limit"] = str(lim.requests)
                out["anthropic-ratelimit-requests-remaining"] = str(max(0, lim.requests - w.requests))
                out["anthropic-ratelimit-requests-reset"] = stamp
            if lim.tokens is not None:
                left = str(max(0, lim.tokens - w.tokens))
                for name in ("tokens", "input-tokens"):
                    out[f"anthropic-ratelimit-{name}-limit"] = str(lim.tokens)
                    out[f"anthropic-ratelimit-{name}-remaining"] = left
                    out[f"anthropic-ratelimit-{name}-reset"] = stamp
            return out
        left_for = go_duration(max(0.0, reset - now))
        if lim.requests is not None:
            out["x-ratelimit-limit-requests"] = str(lim.requests)
            out["x-ratelimit-remaining-requests"] = str(max(0, lim.requests - w.requests))
            out["x-ratelimit-reset-requests"] = left_for
        if lim.tokens is not None:
            out["x-ratelimit-limit-tokens"] = str(lim.tokens)
            out["x-ratelimit-remaining-tokens"] = str(max(0, lim.tokens - w.tokens))
            out["x-ratelimit-reset-tokens"] = left_for
        return out


def go_duration(seconds: float) -> str:
    """OpenAI's reset format: `6m0s`, `1s`, `20ms`."""
    # Rounded up: a reset announced early would send a call into the 429 it is meant to avoid.
    if seconds < 1:
        return f"{max(1, math.ceil(seconds * 1000))}ms"
    minutes, secs = divmod(math.ceil(seconds * 100) / 100, 60)
    if minutes >= 1:
        return f"{int(minutes)}m{math.ceil(secs)}s"
    return f"{secs:g}s"
