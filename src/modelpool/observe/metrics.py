"""The counters and histograms a call updates when it ends (`modelpool_*`, Prometheus).

Labels stay low-cardinality: dialect, pool, route, outcome and failure kind — never a session or request
id. A call only adds to plain dicts (`Tally.record`): a prometheus_client `inc()` costs a lock and
checks, ten times a dict update, and a call touches a dozen series. A scrape turns the tallies into metric
families (`Tally.families`). Gauges that describe state (route state, rests, aggregator stats, calendar)
are computed at scrape time by `collector.GatewayCollector`.

Multiprocess: when `PROMETHEUS_MULTIPROC_DIR` is set (the workers of `serve --workers N` share it), the
tallies are flushed into prometheus_client's file-backed metrics within a second of a call (`Flusher`),
and a scrape answered by any worker sums every worker's files.
"""

from __future__ import annotations

import os
from bisect import bisect_left
from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.utils import floatToGoString

from modelpool.observe.trace import CallTrace, switches, usage_tokens

TTFT_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
DURATION_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 320.0, 600.0)
OVERHEAD_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25)

# name, help, labels — one entry per counter
COUNTERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "modelpool_requests": (
        "Client calls by ingress dialect, pool, serving route and outcome "
        "(ok | rejected | failed | cut | cancelled | error).",
        ("dialect", "pool", "route", "outcome"),
    ),
    "modelpool_attempts": (
        "Upstream attempts by route and result: ok or the failure kind.",
        ("route", "kind"),
    ),
    "modelpool_switches": (
        "Route switches inside a walk: from route, to route, the failure kind that caused it.",
        ("from_route", "to_route", "kind"),
    ),
    "modelpool_hedges": (
        "Hedged first token (SPEC §3.7): races won by the first attempt or by the hedge, and hedges the "
        "budget refused.",
        ("outcome",),
    ),
    "modelpool_input_tokens": (
        "Input tokens of served calls (cached ones included; estimated where the upstream reported none), "
        "by serving route.",
        ("route",),
    ),
    "modelpool_output_tokens": ("Completion tokens reported by the upstream, by serving route.", ("route",)),
    "modelpool_cost_usd": (
        "USD the upstreams billed for served calls (SPEC §14: usage × the prices in force at the call's "
        "start, every attempt that reported usage), by pool, serving route and client key name.",
        ("pool", "route", "key"),
    ),
    "modelpool_translation_dropped": (
        "What translation left out of calls (SPEC §1.6): hosted tools the client only offered, fields and "
        "items with no equivalent on the serving route — by the name x-modelpool-dropped gives it.",
        ("field",),
    ),
}
# Distinct `field` label values kept per process: the names come from client bodies (an unknown key is
# named too), so a client inventing keys must not grow the series without bound.
DROPPED_FIELDS_MAX = 200
HISTOGRAMS: dict[str, tuple[str, tuple[str, ...], tuple[float, ...]]] = {
    "modelpool_ttft_seconds": (
        "Streamed calls: request arrival to the first reasoning/answer event, by serving route.",
        ("route",),
        TTFT_BUCKETS,
    ),
    "modelpool_request_duration_seconds": (
        "Served calls: request arrival to the last byte of the response, by serving route.",
        ("route",),
        DURATION_BUCKETS,
    ),
    "modelpool_gateway_overhead_seconds": (
        "Served calls: the gateway's own time outside upstream attempts (arrival to the first attempt, "
        "plus the serving attempt's end to the last byte).",
        ("dialect",),
        OVERHEAD_BUCKETS,
    ),
}
IN_FLIGHT = ("modelpool_in_flight", "Upstream attempts in progress, by route.")


def multiprocess_dir() -> str | None:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


class _Hist:
    """One histogram series: per-bucket (not cumulative) counts, the last slot is +Inf, and the sum."""

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1  # le semantics: value <= bound
        self.total += value


class Tally:
    """Per-process accumulators, only ever touched from the event loop's thread."""

    def __init__(self) -> None:
        self.counters: dict[str, dict[tuple[str, ...], float]] = {name: {} for name in COUNTERS}
        self.hists: dict[str, dict[tuple[str, ...], _Hist]] = {name: {} for name in HISTOGRAMS}
        self.in_flight: dict[str, int] = {}
        self._requests = self.counters["modelpool_requests"]
        self._attempts = self.counters["modelpool_attempts"]

    def _add(self, series: dict[tuple[str, ...], float], key: tuple[str, ...], amount: float = 1) -> None:
        series[key] = series.get(key, 0) + amount

    def _observe(self, name: str, key: tuple[str, ...], value: float) -> None:
        series = self.hists[name]
        hist = series.get(key)
        if hist is None:
            hist = series[key] = _Hist(HISTOGRAMS[name][2])
        hist.observe(value)

    def record(self, trace: CallTrace) -> None:
        """Everything a finished call adds; called once per call."""
        call = trace.call
        route = trace.served or ""
        self._add(
            self._requests, (trace.ingress, call.pool.id if call is not None else "", route, trace.outcome)
        )
        walker = trace.walker
        hedge = getattr(walker.state, "hedge_outcome", None) if walker is not None else None
        if hedge is not None:
            self._add(self.counters["modelpool_hedges"], (hedge,))
        attempts = trace.attempts
        if attempts:
            for rec in attempts:
                self._add(self._attempts, (rec.route, rec.kind or "unclassified"))
            for frm, to, kind in switches(attempts, trace.served):
                self._add(self.counters["modelpool_switches"], (frm, to, kind))
        if not route:
            return
        dropped = getattr(walker.state, "dropped", None) if walker is not None else None
        if dropped:
            self._dropped(dropped)
        key = (route,)
        self._add(self._attempts, (route, "ok"))
        self._observe("modelpool_request_duration_seconds", key, trace.total)
        ttft = trace.ttft
        if ttft is not None:
            self._observe("modelpool_ttft_seconds", key, ttft)
        overhead = trace.overhead
        if overhead is not None:
            self._observe("modelpool_gateway_overhead_seconds", (trace.ingress,), overhead)
        cost = getattr(trace.walker.state, "cost", None) if trace.walker is not None else None
        if cost:
            self._add(
                self.counters["modelpool_cost_usd"],
                (call.account_pool if call else "", route, trace.key),
                cost,
            )
        tin, tout = usage_tokens(trace)
        if tin:
            self._add(self.counters["modelpool_input_tokens"], key, tin)
        if tout:
            self._add(self.counters["modelpool_output_tokens"], key, tout)

    def _dropped(self, names: list[str]) -> None:
        series = self.counters["modelpool_translation_dropped"]
        for name in names:
            key = (name,)
            if key not in series and len(series) >= DROPPED_FIELDS_MAX:
                key = ("other",)
            series[key] = series.get(key, 0) + 1

    def families(self) -> Iterator[Metric]:
        """The tallies as Prometheus metric families (single-process scrape)."""
        for name, (doc, labels) in COUNTERS.items():
            counter = CounterMetricFamily(name, doc, labels=list(labels))
            for key, value in self.counters[name].items():
                counter.add_metric(list(key), value)
            yield counter
        for name, (doc, labels, _bounds) in HISTOGRAMS.items():
            hist = HistogramMetricFamily(name, doc, labels=list(labels))
            for key, h in self.hists[name].items():
                hist.add_metric(list(key), _cumulative(h), sum_value=h.total)
            yield hist
        gauge = GaugeMetricFamily(IN_FLIGHT[0], IN_FLIGHT[1], labels=["route"])
        for route, n in self.in_flight.items():
            gauge.add_metric([route], n)
        yield gauge


def _cumulative(h: _Hist) -> list[tuple[str, float]]:
    out: list[tuple[str, float]] = []
    running = 0
    for bound, n in zip((*h.bounds, float("inf")), h.counts, strict=True):
        running += n
        out.append((floatToGoString(bound), running))
    return out


class Flusher:
    """Multiprocess mode: carries the tallies' growth since the last flush into prometheus_client's
    file-backed metrics, which every worker writes and any worker's scrape sums."""

    def __init__(self, tally: Tally) -> None:
        from prometheus_client import Counter, Gauge, Histogram, values

        # prometheus_client picks file-backed values when it is first imported; a worker forked from a
        # process that imported it before the directory was set would otherwise keep in-memory values.
        values.ValueClass = values.get_value_class()
        self.tally = tally
        self._counters = {
            name: Counter(name, doc, list(labels), registry=None) for name, (doc, labels) in COUNTERS.items()
        }
        self._hists = {
            name: Histogram(name, doc, list(labels), buckets=bounds, registry=None)
            for name, (doc, labels, bounds) in HISTOGRAMS.items()
        }
        self._gauge = Gauge(*IN_FLIGHT, ["route"], multiprocess_mode="livesum", registry=None)
        self._sent_counts: dict[tuple[str, tuple[str, ...]], float] = {}
        self._sent_hists: dict[tuple[str, tuple[str, ...]], tuple[list[int], float]] = {}

    def flush(self) -> None:
        for name, series in self.tally.counters.items():
            for key, value in series.items():
                delta = value - self._sent_counts.get((name, key), 0)
                if delta:
                    self._counters[name].labels(*key).inc(delta)
                    self._sent_counts[(name, key)] = value
        for name, hseries in self.tally.hists.items():
            for key, h in hseries.items():
                self._flush_hist(name, key, h)
        for route, n in self.tally.in_flight.items():
            self._gauge.labels(route).set(n)

    def _flush_hist(self, name: str, key: tuple[str, ...], h: _Hist) -> None:
        sent_counts, sent_sum = self._sent_hists.get((name, key), ([0] * len(h.counts), 0.0))
        if sent_counts == h.counts:
            return
        child: Any = self._hists[name].labels(*key)
        # prometheus_client has no public bulk add for a histogram; its per-bucket values are the
        # documented multiprocess storage (one value per bucket plus the sum).
        for i, (now, before) in enumerate(zip(h.counts, sent_counts, strict=True)):
            if now != before:
                child._buckets[i].inc(now - before)
        child._sum.inc(h.total - sent_sum)
        self._sent_hists[(name, key)] = (list(h.counts), h.total)
