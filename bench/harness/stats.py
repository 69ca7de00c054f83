"""Summaries of one target's samples and the pairwise "added latency" against the direct baseline."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from harness.load import Sample

PERCENTILES = (50, 90, 99)


def percentile(sorted_values: list[float], p: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), on an already sorted list."""
    if not sorted_values:
        return math.nan
    k = (len(sorted_values) - 1) * p / 100
    lo = math.floor(k)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


@dataclass
class Dist:
    """A latency distribution in milliseconds."""

    p50: float
    p90: float
    p99: float
    mean: float
    min: float
    max: float

    @classmethod
    def of(cls, seconds: list[float]) -> Dist:
        ms = sorted(s * 1000 for s in seconds)
        if not ms:
            return cls(math.nan, math.nan, math.nan, math.nan, math.nan, math.nan)
        p50, p90, p99 = (percentile(ms, p) for p in PERCENTILES)
        return cls(p50, p90, p99, sum(ms) / len(ms), ms[0], ms[-1])


@dataclass
class Tally:
    """What accumulates for one target over the blocks of one scenario."""

    samples: list[Sample] = field(default_factory=list)
    wall: float = 0.0  # seconds spent in this target's measured blocks
    server_cpu: float = 0.0  # CPU seconds of the target's own process (gateway / LiteLLM) in those blocks
    upstream_cpu: float = 0.0  # CPU seconds of the simulated fleet in those blocks
    client_cpu: float = 0.0  # CPU seconds of the load generator (this process) in those blocks
    tcp_opens: int | None = 0  # machine-wide TCP connections opened during those blocks (None: unknown)
    blocks: int = 0
    rss_mb: list[float] = field(default_factory=list)  # the target process's RSS after each block


@dataclass
class Summary:
    target: str
    calls: int
    errors: int
    rps: float
    total: Dist
    ttft: Dist | None
    server_cpu_ms_per_call: float | None
    upstream_cpu_ms_per_call: float
    client_cpu_ms_per_call: float
    tcp_opens_per_call: float | None
    routes: dict[str, int]
    error_samples: list[str]
    chunks_per_call: float | None = None  # SSE events the client received per stream
    server_cpu_us_per_chunk: float | None = None  # the target process's CPU ÷ every chunk it relayed
    rss_mb_peak: float | None = None  # the target process's RSS, largest and last block-end sample
    rss_mb_end: float | None = None

    @classmethod
    def of(cls, target: str, tally: Tally, stream: bool, has_server: bool) -> Summary:
        ok = [s for s in tally.samples if s.ok]
        bad = [s for s in tally.samples if not s.ok]
        n = len(tally.samples)
        routes = Counter(s.route for s in ok if s.route)
        chunks = sum(s.events for s in tally.samples)
        per_chunk = tally.server_cpu * 1e6 / chunks if stream and has_server and chunks else None
        return cls(
            target=target,
            calls=len(ok),
            errors=len(bad),
            rps=len(ok) / tally.wall if tally.wall > 0 else math.nan,
            total=Dist.of([s.total for s in ok]),
            ttft=Dist.of([s.ttft for s in ok if s.ttft is not None]) if stream else None,
            server_cpu_ms_per_call=tally.server_cpu * 1000 / n if has_server and n else None,
            upstream_cpu_ms_per_call=tally.upstream_cpu * 1000 / n if n else math.nan,
            client_cpu_ms_per_call=tally.client_cpu * 1000 / n if n else math.nan,
            tcp_opens_per_call=tally.tcp_opens / n if n and tally.tcp_opens is not None else None,
            routes=dict(routes.most_common()),
            error_samples=sorted({s.error or "?" for s in bad})[:5],
            chunks_per_call=chunks / n if stream and n else None,
            server_cpu_us_per_chunk=per_chunk,
            rss_mb_peak=max(tally.rss_mb) if tally.rss_mb else None,
            rss_mb_end=tally.rss_mb[-1] if tally.rss_mb else None,
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Delta:
    """`target` minus `direct` on one metric: what the proxy in between costs."""

    target: str
    metric: str  # "total" or "ttft"
    p50_ms: float
    p90_ms: float
    p99_ms: float
    mean_ms: float
    p50_ratio: float  # target p50 / direct p50
    p99_ratio: float

    @classmethod
    def between(cls, target: str, metric: str, t: Dist, d: Dist) -> Delta:
        return cls(
            target,
            metric,
            t.p50 - d.p50,
            t.p90 - d.p90,
            t.p99 - d.p99,
            t.mean - d.mean,
            t.p50 / d.p50 if d.p50 else math.nan,
            t.p99 / d.p99 if d.p99 else math.nan,
        )


def deltas(summaries: dict[str, Summary], baseline: str = "direct") -> list[Delta]:
    """Added latency of every non-baseline target, on whole calls and (streams) on TTFT."""
    base = summaries.get(baseline)
    if base is None:
        return []
    out: list[Delta] = []
    for name, s in summaries.items():
        if name == baseline:
            continue
        out.append(Delta.between(name, "total", s.total, base.total))
        if s.ttft is not None and base.ttft is not None:
            out.append(Delta.between(name, "ttft", s.ttft, base.ttft))
    return out


def comparisons(summaries: dict[str, Summary], found: list[Delta]) -> dict[str, float]:
    """Ratios between proxies (SPEC §13 asks for ratios): LiteLLM's added p50/p99 latency over modelpool's,
    and modelpool's throughput over LiteLLM's."""
    if "litellm" not in summaries or "modelpool" not in summaries:
        return {}
    by = {(d.target, d.metric): d for d in found}
    out: dict[str, float] = {}
    for metric in ("total", "ttft"):
        lite, mine = by.get(("litellm", metric)), by.get(("modelpool", metric))
        if lite and mine:
            out[f"litellm_over_modelpool_added_p50_{metric}"] = _ratio(lite.p50_ms, mine.p50_ms)
            out[f"litellm_over_modelpool_added_p99_{metric}"] = _ratio(lite.p99_ms, mine.p99_ms)
    out["modelpool_over_litellm_rps"] = _ratio(summaries["modelpool"].rps, summaries["litellm"].rps)
    return out


def _ratio(a: float, b: float) -> float:
    return a / b if b and not math.isnan(b) else math.nan
