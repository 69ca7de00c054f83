"""What a reply announces is left of a route's quota (SPEC §3.8), read into one `Quota`: OpenAI-style
`x-ratelimit-remaining-{requests,tokens}` with `x-ratelimit-reset-{requests,tokens}` (durations: `6m0s`,
`1s`, `20ms`), Anthropic's `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-*` (`remaining`,
and `reset` in RFC 3339), and `retry-after`. The book that acts on it is `quota.QuotaBook`."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from modelpool.health.classify import parse_retry_after

_GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)")
_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
DEFAULT_RESET = 60.0  # a count announced without its reset: believed for a minute (a typical window)


@dataclass(slots=True)
class Quota:
    """What one route announced last: left counts (None: not announced) and when each resets (epoch)."""

    requests: int | None = None
    requests_reset: float = 0.0
    tokens: int | None = None
    tokens_reset: float = 0.0
    at: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "requests_reset": self.requests_reset,
            "tokens": self.tokens,
            "tokens_reset": self.tokens_reset,
            "at": self.at,
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Quota:
        def count(v: Any) -> int | None:
            return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None

        def moment(v: Any) -> float:
            return float(v) if isinstance(v, int | float) and math.isfinite(v) else 0.0

        return cls(
            count(raw.get("requests")),
            moment(raw.get("requests_reset")),
            count(raw.get("tokens")),
            moment(raw.get("tokens_reset")),
            moment(raw.get("at")),
        )


def parse_reset(value: str | None, now: float) -> float | None:
    """A reset as an epoch: an RFC 3339 moment (Anthropic), a Go-style duration (`6m0s`, `20ms`,
    OpenAI) or plain seconds. What a text means is worked out once (a route repeats the same few
    texts reply after reply) and kept: an absolute moment, or a delay from `now` (issue #29)."""
    if not value:
        return None
    found = _RESETS.get(value)
    if found is None:
        if len(_RESETS) >= MAX_RESETS_KEPT:
            _RESETS.clear()
        found = _RESETS[value] = _reset_of(value)
    absolute, seconds = found
    if seconds is None:
        return None
    return seconds if absolute else now + seconds


MAX_RESETS_KEPT = 1024
_RESETS: dict[str, tuple[bool, float | None]] = {}  # a reset text → (absolute?, epoch or delay)


def _reset_of(value: str) -> tuple[bool, float | None]:
    value = value.strip()
    if "T" in value and ("-" in value[:8]):
        try:
            return True, datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return True, None
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        # Some upstreams send the reset as a Unix time rather than a delay.
        return (True, seconds) if seconds > 1e9 else (False, max(0.0, seconds))
    parts = _GO_DURATION.findall(value)
    if not parts or "".join(n + u for n, u in parts) != value:
        return True, None
    return False, sum(float(n) * _UNITS[u] for n, u in parts)


def _count(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        n = int(value)  # surrounding whitespace is allowed by int() itself
    except ValueError:
        try:
            n = int(float(value.strip()))
        except ValueError:
            return None
    return max(0, n)


_ANTHROPIC_TOKENS = tuple(
    (f"anthropic-ratelimit-{name}-remaining", f"anthropic-ratelimit-{name}-reset")
    for name in ("tokens", "input-tokens", "output-tokens")
)


def read_quota(headers: Mapping[str, str], now: float) -> Quota | None:
    """The quota a reply's headers announce, or None when they announce none (case-insensitive
    `headers`, e.g. the connection's CIMultiDict)."""
    get = headers.get
    q = Quota(at=now)
    found = False
    req = _count(get("x-ratelimit-remaining-requests"))
    if req is not None:
        found = True
        q.requests = req
        q.requests_reset = parse_reset(get("x-ratelimit-reset-requests"), now) or now + DEFAULT_RESET
    tok = _count(get("x-ratelimit-remaining-tokens"))
    if tok is not None:
        found = True
        q.tokens = tok
        q.tokens_reset = parse_reset(get("x-ratelimit-reset-tokens"), now) or now + DEFAULT_RESET
    req = _count(get("anthropic-ratelimit-requests-remaining"))
    if req is not None:
        found = True
        q.requests = req if q.requests is None else min(q.requests, req)
        q.requests_reset = max(
            q.requests_reset, parse_reset(get("anthropic-ratelimit-requests-reset"), now) or now
        )
    # The tightest of the token budgets an Anthropic reply announces decides (the call's estimate is
    # of input; an exhausted output budget fails the call just as well).
    for remaining, reset_name in _ANTHROPIC_TOKENS:
        tok = _count(get(remaining))
        if tok is None:
            continue
        found = True
        reset = parse_reset(get(reset_name), now) or now + DEFAULT_RESET
        if q.tokens is None or tok < q.tokens:
            q.tokens, q.tokens_reset = tok, reset
    retry = parse_retry_after(get("retry-after"), now)
    if retry is not None and retry > 0:
        # "Come back later" on any answer: no request until then.
        found = True
        q.requests = 0
        q.requests_reset = max(q.requests_reset, now + retry)
    return q if found else None


# The headers whose presence says a reply announces its quota. Looked up once each per reply in the
# parsed (case-insensitive) headers: measured cheaper than a byte search per header while parsing
# (bench/quota.py `cost`), and a reply without them allocates nothing.
ANNOUNCING = (
    "x-ratelimit-remaining-requests",
    "x-ratelimit-remaining-tokens",
    "anthropic-ratelimit-requests-remaining",
    "anthropic-ratelimit-tokens-remaining",
    "anthropic-ratelimit-input-tokens-remaining",
    "anthropic-ratelimit-output-tokens-remaining",
    "retry-after",
)


def announces_quota(headers: Mapping[str, str]) -> bool:
    # A plain loop, not any(<generator>): no generator object per reply.
    for name in ANNOUNCING:  # noqa: SIM110
        if name in headers:
            return True
    return False
