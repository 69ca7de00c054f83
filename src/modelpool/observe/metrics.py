"""The counters and histograms a call updates when it ends (`modelpool_*`, Prometheus).

Labels stay low-cardinality: dialect, pool, route, outcome and failure kind — never a session or request
id. Each labelled child is bound once and kept in a dict, so a call pays a dict lookup and an increment
per series, not `labels()`'s validation and locking. Gauges that describe state (route state, rests,
aggregator stats, calendar) are computed at scrape time by `collector.GatewayCollector` instead.

Multiprocess: when `PROMETHEUS_MULTIPROC_DIR` is set (one directory shared by the workers of
`serve --workers N`), prometheus_client writes every value to per-process files and a scrape sums them.
"""

from __future__ import annotations

import os
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from modelpool.observe.trace import CallTrace, switches, usage_tokens

TTFT_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
DURATION_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 320.0, 600.0)
OVERHEAD_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25)


def multiprocess_dir() -> str | None:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


class _Bound:
    """A metric's labelled children by label tuple, bound on first use."""

    __slots__ = ("_children", "_metric")

    def __init__(self, metric: Any) -> None:
        self._metric = metric
        self._children: dict[tuple[str, ...], Any] = {}

    def __call__(self, *labels: str) -> Any:
        child = self._children.get(labels)
        if child is None:
            child = self._children[labels] = self._metric.labels(*labels)
        return child


class Metrics:
    """One set per gateway (tests run several gateways in one process, each with its own registry)."""

    def __init__(self, registry: CollectorRegistry | None) -> None:
        r = registry
        self.requests = _Bound(
            Counter(
                "modelpool_requests",
                "Client calls by ingress dialect, pool, serving route and outcome "
                "(ok | rejected | failed | cut | cancelled).",
                ["dialect", "pool", "route", "outcome"],
                registry=r,
            )
        )
        self.attempts = _Bound(
            Counter(
                "modelpool_attempts",
                "Upstream attempts by route and result: ok or the failure kind.",
                ["route", "kind"],
                registry=r,
            )
        )
        self.switches = _Bound(
            Counter(
                "modelpool_switches",
                "Route switches inside a walk: from route, to route, the failure kind that caused it.",
                ["from_route", "to_route", "kind"],
                registry=r,
            )
        )
        self.ttft = _Bound(
            Histogram(
                "modelpool_ttft_seconds",
                "Streamed calls: request arrival to the first reasoning/answer event, by serving route.",
                ["route"],
                buckets=TTFT_BUCKETS,
                registry=r,
            )
        )
        self.duration = _Bound(
            Histogram(
                "modelpool_request_duration_seconds",
                "Served calls: request arrival to the last byte of the response, by serving route.",
                ["route"],
                buckets=DURATION_BUCKETS,
                registry=r,
            )
        )
        self.overhead = _Bound(
            Histogram(
                "modelpool_gateway_overhead_seconds",
                "Served calls: the gateway's time outside upstream attempts (arrival to the first attempt, "
                "plus the serving attempt's end to the last byte).",
                ["dialect"],
                buckets=OVERHEAD_BUCKETS,
                registry=r,
            )
        )
        self.tokens_in = _Bound(
            Counter(
                "modelpool_input_tokens",
                "Prompt tokens reported by the upstream, by serving route.",
                ["route"],
                registry=r,
            )
        )
        self.tokens_out = _Bound(
            Counter(
                "modelpool_output_tokens",
                "Completion tokens reported by the upstream, by serving route.",
                ["route"],
                registry=r,
            )
        )
        self.in_flight = _Bound(
            Gauge(
                "modelpool_in_flight",
                "Upstream attempts in progress, by route.",
                ["route"],
                multiprocess_mode="livesum",
                registry=r,
            )
        )

    def record(self, trace: CallTrace) -> None:
        """Everything a finished call adds; called once per call."""
        call = trace.call
        pool = call.pool.id if call is not None else ""
        route = trace.served or ""
        self.requests(trace.ingress, pool, route, trace.outcome).inc()
        attempts = trace.attempts
        for rec in attempts:
            self.attempts(rec.route, rec.kind or "unclassified").inc()
        if attempts:
            for frm, to, kind in switches(attempts, trace.served):
                self.switches(frm, to, kind).inc()
        if not route:
            return
        self.attempts(route, "ok").inc()
        self.duration(route).observe(trace.total)
        ttft = trace.ttft
        if ttft is not None:
            self.ttft(route).observe(ttft)
        overhead = trace.overhead
        if overhead is not None:
            self.overhead(trace.ingress).observe(overhead)
        tin, tout = usage_tokens(trace.relay)
        if tin:
            self.tokens_in(route).inc(tin)
        if tout:
            self.tokens_out(route).inc(tout)
