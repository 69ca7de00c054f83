"""Endpoint-stats shapes of aggregator gateways, normalized (gateways.md §1.4, §5.2, §5.3).

Vercel publishes `GET {root}/v1/models/{creator}/{model}/endpoints` without a key; OpenRouter publishes
`GET {root}/api/v1/models/{author}/{slug}/endpoints`, whose latency/throughput are null without a key.
Both are parsed into the same `EndpointStats`, so the ranking never looks at a provider's wire format.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote, urlsplit

from modelpool.upstream.providers import api_root

AggregatorKind = Literal["vercel", "openrouter"]
AGGREGATOR_KINDS: frozenset[str] = frozenset({"vercel", "openrouter"})

# OpenRouter model suffixes that are routing shortcuts, not models: the stats live under the bare id.
_OPENROUTER_SHORTCUTS = (":nitro", ":floor", ":online")
_VERSION_TAIL = re.compile(r"/v\d+(?:beta|alpha)?\d*$")


class StatsUnavailable(Exception):
    """The stats could not be fetched or parsed (HTTP error, timeout, no endpoints, bad JSON)."""


@dataclass(frozen=True, slots=True)
class EndpointStats:
    """One inner provider of one model, normalized across Vercel and OpenRouter (gateways.md §5.3)."""

    slug: str  # what `order`/`only` accept: Vercel `provider_name`, OpenRouter `tag`
    name: str  # display name (OpenRouter `provider_name`; Vercel has none beyond the slug)
    tps_p50: float | None  # median output tokens/s (Vercel last 1h, OpenRouter last 30m)
    ttft_p50_ms: float | None  # median time to first token, ms
    uptime_15m: float | None  # % successful; OpenRouter: last 5m, else last 30m
    status_active: bool  # status 0 (a missing status is taken as active: no evidence otherwise)
    deprecated: bool
    tools: bool  # "tools" in supported_parameters
    context_length: int | None

    @property
    def has_data(self) -> bool:
        return self.tps_p50 is not None


@dataclass(frozen=True, slots=True)
class ModelStats:
    model: str
    kind: str
    endpoints: tuple[EndpointStats, ...]
    authenticated: bool = False  # the fetch carried a key (OpenRouter speed figures need one)


# ---- URL and parsing -------------------------------------------------------------------------------


def stats_root(kind: str, base_url: str) -> str:
    """The versioned API root the stats live under: `…/v1` (Vercel), `…/api/v1` (OpenRouter)."""
    if kind == "vercel":
        return api_root(base_url)
    if kind == "openrouter":
        return _openrouter_root(base_url)
    raise StatsUnavailable(f"provider kind {kind!r} publishes no endpoint stats")


def stats_url(kind: str, base_url: str, model: str) -> str:
    """The endpoint-stats URL for `model` on the aggregator at `base_url` (with or without `/v1`).

    Each path segment is percent-encoded on its own: the model id's `/` stays a separator.
    """
    root = stats_root(kind, base_url)
    if kind == "openrouter":
        for suffix in _OPENROUTER_SHORTCUTS:
            model = model.removesuffix(suffix)
    if "/" not in model.strip("/"):
        raise StatsUnavailable(f"model id {model!r} is not creator/model: no endpoint stats")
    path = "/".join(quote(seg, safe="") for seg in model.strip("/").split("/"))
    return f"{root}/models/{path}/endpoints"


def _openrouter_root(base_url: str) -> str:
    # OpenRouter's API lives under /api/v1; people configure `https://openrouter.ai`, `…/api` or
    # `…/api/v1`, and the gateway's own normalization may already have turned the bare host into `…/v1`.
    root = base_url.rstrip("/")
    path = urlsplit(root).path
    if path in ("", "/v1"):
        return root.removesuffix("/v1") + "/api/v1"
    if _VERSION_TAIL.search(root):
        return root
    return root + "/v1"


def parse_endpoints(
    kind: str,
    payload: Any,
    model: str,
    *,
    authenticated: bool = False,
    now: float | None = None,
) -> ModelStats:
    """Parse an endpoints answer (`{"data": {"endpoints": [...]}}`) of either aggregator.

    Defensive on purpose: every metric may be null or missing (no recent traffic, no key), and
    undocumented fields are ignored. An answer without a usable endpoint raises `StatsUnavailable`
    (provider-guard treats an empty list the same way), so the caller keeps its previous stats.
    """
    data = payload.get("data") if isinstance(payload, dict) else None
    raw = data.get("endpoints") if isinstance(data, dict) else None
    if not isinstance(raw, list):
        raise StatsUnavailable("answer has no data.endpoints list")
    now_ms = (time.time() if now is None else now) * 1000.0
    model_deprecated = _deprecated_at(data.get("deprecated_at"), now_ms) if isinstance(data, dict) else False
    parse_one = _parse_openrouter if kind == "openrouter" else _parse_vercel
    seen: set[str] = set()
    endpoints: list[EndpointStats] = []
    for item in raw:
        if not isinstance(item, dict):
            continue
        ep = parse_one(item, now_ms, model_deprecated)
        # One slug appears once in an order list; a repeated slug keeps its first row.
        if ep is None or ep.slug.lower() in seen:
            continue
        seen.add(ep.slug.lower())
        endpoints.append(ep)
    if not endpoints:
        raise StatsUnavailable("answer lists no endpoints")
    return ModelStats(model=model, kind=kind, endpoints=tuple(endpoints), authenticated=authenticated)


def _parse_vercel(item: dict[str, Any], now_ms: float, model_deprecated: bool) -> EndpointStats | None:
    slug = item.get("provider_name")
    if not isinstance(slug, str) or not slug:
        return None
    return EndpointStats(
        slug=slug,
        name=slug,
        tps_p50=_p50(item.get("throughput_last_1h")),
        ttft_p50_ms=_p50(item.get("latency_last_1h")),
        uptime_15m=_num(item.get("uptime_last_15m")),
        status_active=_active(item.get("status")),
        deprecated=model_deprecated or _endpoint_deprecated(item, now_ms),
        tools=_tools(item),
        context_length=_int(item.get("context_length")),
    )


def _parse_openrouter(item: dict[str, Any], now_ms: float, model_deprecated: bool) -> EndpointStats | None:
    slug = item.get("tag")  # `provider_name` is a display name ("DeepInfra"), not a routing slug
    if not isinstance(slug, str) or not slug:
        return None
    name = item.get("provider_name")
    uptime = _num(item.get("uptime_last_5m"))
    if uptime is None:
        uptime = _num(item.get("uptime_last_30m"))
    return EndpointStats(
        slug=slug,
        name=name if isinstance(name, str) and name else slug,
        tps_p50=_p50(item.get("throughput_last_30m")),
        ttft_p50_ms=_p50(item.get("latency_last_30m")),  # ms per the field description (gateways.md §5.2)
        uptime_15m=uptime,
        status_active=_active(item.get("status")),
        deprecated=model_deprecated or _endpoint_deprecated(item, now_ms),
        tools=_tools(item),
        context_length=_int(item.get("context_length")),
    )


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, int | float) and math.isfinite(value) and value >= 0:
        return float(value)
    return None


def _p50(value: Any) -> float | None:
    return _num(value.get("p50")) if isinstance(value, dict) else None


def _int(value: Any) -> int | None:
    num = _num(value)
    return int(num) if num is not None and num > 0 else None


def _active(status: Any) -> bool:
    if status is None:
        return True
    return isinstance(status, int) and not isinstance(status, bool) and status == 0


def _tools(item: dict[str, Any]) -> bool:
    params = item.get("supported_parameters")
    return isinstance(params, list) and "tools" in params


def _endpoint_deprecated(item: dict[str, Any], now_ms: float) -> bool:
    # No per-endpoint flag is documented (gateways.md §1.3); accept one if it ever appears.
    return item.get("deprecated") is True or _deprecated_at(item.get("deprecated_at"), now_ms)


def _deprecated_at(value: Any, now_ms: float) -> bool:
    when = _num(value)
    if when is None:
        return False
    if when < 1e11:  # seconds, not milliseconds
        when *= 1000.0
    return when <= now_ms  # a future date announces a deprecation; it is not in force yet
