"""Failure classification (SPEC §5).

A failure is not just a string: its kind decides how long a route rests and whether the walk retries the
same route first. The kind is read from the HTTP status and the error text, English and Chinese, in a
fixed precedence — quota, auth, unsupported, rate-limit, server, network, request — because one status
carries several meanings: `429 insufficient balance` is a quota wall (rests until tomorrow), `429 invalid
api key` is an auth failure, and only a bare `429` is a rate limit.
"""

from __future__ import annotations

import math
import re
import time
from datetime import UTC
from email.utils import parsedate_to_datetime
from enum import StrEnum
from typing import Any

import orjson


class FailureKind(StrEnum):
    QUOTA = "quota"
    AUTH = "auth"
    UNSUPPORTED = "unsupported"
    RATE_LIMIT = "rate-limit"
    SERVER = "server"
    NETWORK = "network"
    REQUEST = "request"  # the request itself is wrong: returned to the client, never blamed on a route
    CANCELLED = "cancelled"  # the client went away or a deadline passed: not a route failure
    UNCLASSIFIED = "unclassified"


# Kinds whose cause does not go away between two dispatches to the same route.
_NOT_RETRYABLE = frozenset(
    {FailureKind.QUOTA, FailureKind.UNSUPPORTED, FailureKind.REQUEST, FailureKind.CANCELLED}
)

# Classification only needs the head of an error body; a multi-megabyte HTML error page must not cost
# regex time on the hot path.
_MAX_SCAN = 8000

# A Retry-After beyond a day is a misbehaving upstream, not a plan; the registry would bench the route
# for longer than any quota rest.
MAX_RETRY_AFTER = 86400.0


def _words(*patterns: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns))


_QUOTA = _words(
    r"insufficient[ _](?:quota|balance|credits?|funds)",
    r"out of (?:credits?|quota|balance)",
    r"please top[ -]?up",
    r"exceeded your current quota",
    r"quota (?:exceeded|exhausted|has been (?:exceeded|exhausted|used up))",
    r"exceeded (?:the |your )?(?:monthly |daily )?quota",
    r"not enough (?:quota|credits?|balance)",
    r"credit balance is too low",
    r"requires more credits",
    r"balance (?:is )?(?:insufficient|not enough|too low)",
    r"billing",
    r"payment required",
    r"arrearage",
    r"余额不足",
    r"请充值",
    r"额度已用尽",
    r"额度不足",
    r"额度已用完",
    r"配额不足",
    r"配额已用尽",
    r"欠费",
    r"账户余额",
)

_AUTH = _words(
    r"(?:invalid|incorrect|missing|expired|revoked)[ _-]?(?:api[ _-]?key|x-api-key|token|credentials?)",
    r"api[ _-]?key (?:is )?(?:not valid|invalid|expired|missing)",
    r"unauthori[sz]ed",
    r"authentication",
    r"permission[ _]denied",
    r"无效的?(?:令牌|密钥|api ?key)",
    r"(?:令牌|密钥|api ?key) ?(?:无效|已过期|错误)",
    r"鉴权失败",
    r"认证失败",
    r"未授权",
)

_UNSUPPORTED = _words(
    r"unsupported",
    r"does not support",
    r"doesn't support",
    r"not supported",
    r"model[ _]not[ _]found",
    r"no such model",
    r"unknown model",
    r"invalid model",
    r"model\W[^.\n]{0,80}?(?:not found|does not exist|not exist|is not available)",
    r"不支持",
    r"模型不存在",
    r"无可用渠道",
)

_RATE_LIMIT = _words(
    r"rate[ _-]?limit",
    r"too many (?:requests|concurrent)",
    r"(?:requests|tokens) per (?:min|minute|second|day)",
    r"slow down",
    r"请求过于频繁",
    r"请求过多",
    r"限流",
    r"频率限制",
    r"速率限制",
    r"访问频率",
)

_SERVER = _words(
    r"overloaded",
    r"internal[ _]server[ _]error",
    r"server[ _]error",
    r"bad gateway",
    r"service unavailable",
    r"temporarily unavailable",
    r"gateway timeout",
    r"at capacity",
    r"服务器错误",
    r"服务繁忙",
    r"负载已饱和",
    r"系统繁忙",
)

_NETWORK = _words(
    r"\btime[ d_-]?out",
    r"timed out",
    r"connection (?:reset|refused|error|closed|aborted|lost)",
    r"econnreset|econnrefused|etimedout|enotfound|epipe",
    r"reset by peer",
    r"broken pipe",
    r"socket hang up",
    r"getaddrinfo|name resolution",
    r"network",
    r"\bstall",
    r"stream (?:ended|closed|cut)",
    r"without (?:a )?terminator",
    r"incomplete (?:read|chunked|response)",
    r"unexpected eof|\beof\b",
    r"超时",
    r"连接(?:失败|超时|重置|中断|被拒绝)",
    r"网络",
)

_REQUEST = _words(
    r"context[ _]length",
    r"maximum context",
    r"prompt is too long",
    r"exceeds the available context size",  # llama.cpp's llama-server
    r"exceed_context_size",
    r"field required",
    r"missing required",
    r"上下文长度",
)

# A status written into the text ("429 invalid api key", "HTTP 503", "status: 402") when the caller
# has none — e.g. a stored error re-classified on load.
_STATUS_IN_TEXT = re.compile(
    r"(?:^\W*|\b(?:http(?:/[\d.]+)?|status(?:[ _]?code)?|code|error)\W{0,3})([1-5]\d\d)\b"
)

# A bare 404 is not here: it usually means a wrong base_url or path, which is the route's fault and
# should rest it (a 404 that names a missing model is `unsupported` above).
_REQUEST_STATUSES = frozenset({400, 413, 422})


def error_text(message: str | bytes | object | None) -> str:
    """Readable text of an error payload.

    Objects are serialised as JSON (never `str(obj)`, which yields unclassifiable junk like `[object
    Object]`); bytes are decoded leniently; JSON with `\\uXXXX` escapes is unescaped so `余额不足`
    stays matchable.
    """
    if message is None:
        return ""
    if isinstance(message, bytes | bytearray | memoryview):
        return _unescape_json(bytes(message).decode("utf-8", errors="replace"))
    if isinstance(message, str):
        return _unescape_json(message)
    if isinstance(message, BaseException):
        return _exception_text(message)
    return _dump(message)


def _dump(obj: object) -> str:
    try:
        return orjson.dumps(obj, default=_json_default, option=orjson.OPT_NON_STR_KEYS).decode()
    except (TypeError, orjson.JSONEncodeError):
        return repr(obj)


def _json_default(obj: Any) -> Any:
    if isinstance(obj, bytes | bytearray):
        return bytes(obj).decode("utf-8", errors="replace")
    if isinstance(obj, set | frozenset | tuple):
        return list(obj)
    if isinstance(obj, BaseException):
        return _exception_text(obj)
    if hasattr(obj, "__dict__"):
        return {k: v for k, v in vars(obj).items() if not k.startswith("_")}
    return repr(obj)


def _exception_text(exc: BaseException) -> str:
    parts = [error_text(a) if not isinstance(a, str) else a for a in exc.args]
    detail = "; ".join(p for p in parts if p)
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__


def _unescape_json(text: str) -> str:
    # Only JSON bodies with escapes need the round trip; plain text is returned untouched.
    stripped = text.strip()
    if "\\u" not in stripped or stripped[:1] not in "{[":
        return text
    try:
        return _dump(orjson.loads(stripped))
    except orjson.JSONDecodeError:
        return text


def classify(
    status: int | None, message: str | bytes | object | None, *, network: bool = False
) -> FailureKind:
    """The failure kind of one attempt (SPEC §5), by fixed precedence."""
    text = error_text(message)[:_MAX_SCAN].lower()
    if status is None and not network:
        status = _status_from_text(text)
    if status == 402 or _QUOTA.search(text):
        return FailureKind.QUOTA
    if status in (401, 403) or _AUTH.search(text):
        return FailureKind.AUTH
    if _UNSUPPORTED.search(text):
        return FailureKind.UNSUPPORTED
    if status == 429 or _RATE_LIMIT.search(text):
        return FailureKind.RATE_LIMIT
    if (status is not None and 500 <= status <= 599) or _SERVER.search(text):
        return FailureKind.SERVER
    if network or status == 408 or _NETWORK.search(text):
        return FailureKind.NETWORK
    if status in _REQUEST_STATUSES or _REQUEST.search(text):
        return FailureKind.REQUEST
    return FailureKind.UNCLASSIFIED


def _status_from_text(text: str) -> int | None:
    m = _STATUS_IN_TEXT.search(text)
    return int(m.group(1)) if m else None


def retryable(kind: FailureKind | str) -> bool:
    """Whether the walk may retry the same route before switching (SPEC §3.2)."""
    return FailureKind(kind) not in _NOT_RETRYABLE


def counts_against_route(kind: FailureKind | str) -> bool:
    """Whether a failure of this kind is the route's fault (and so moves its health and rests)."""
    return FailureKind(kind) not in (FailureKind.REQUEST, FailureKind.CANCELLED)


def parse_retry_after(value: str | float | None, now: float | None = None) -> float | None:
    """Seconds to wait from a `Retry-After` header: delta-seconds or an HTTP-date; None if unusable."""
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _clamp_delay(float(value))
    text = str(value).strip()
    if not text:
        return None
    try:
        return _clamp_delay(float(text))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT; a zone-less one is read the same way
        when = when.replace(tzinfo=UTC)
    return _clamp_delay(when.timestamp() - (time.time() if now is None else now), past_ok=True)


def _clamp_delay(seconds: float, *, past_ok: bool = False) -> float | None:
    if math.isnan(seconds):
        return None
    if seconds < 0:
        # A date in the past means "now"; a negative delta is malformed.
        return 0.0 if past_ok else None
    return min(seconds, MAX_RETRY_AFTER)
