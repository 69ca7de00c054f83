"""Gauges computed when Prometheus scrapes, from the gateway's in-memory state — never on a call's path.

Under `serve --workers N` each worker holds its own health registry and caches, so these describe the
worker that answered the scrape (the counters and histograms are summed over all workers).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from modelpool import __version__
from modelpool.health.record import RouteState

if TYPE_CHECKING:
    from modelpool.engine import Engine

ROUTE_STATES = tuple(s.value for s in RouteState)
CALENDAR_STATES = ("synced", "stale", "failed", "not_synced", "bundled", "off")


class GatewayCollector(Collector):
    def __init__(self, gw: Engine) -> None:
        self.gw = gw

    def describe(self) -> list[Metric]:
        return []  # computed per scrape: nothing to check at registration

    def collect(self) -> Iterator[Metric]:
        yield from self._routes()
        yield from self._connections()
        yield from self._aggregators()
        yield self._calendar()
        info = GaugeMetricFamily("modelpool_build_info", "modelpool's version.", labels=["version"])
        info.add_metric([__version__], 1)
        yield info

    def _routes(self) -> Iterator[Metric]:
        gw = self.gw
        rt = gw.runtime
        now = gw.clock()
        state = GaugeMetricFamily(
            "modelpool_route_state",
            "1 for the route's current health state (ok | degraded | unavailable | unknown), else 0.",
            labels=["route", "state"],
        )
        rest = GaugeMetricFamily(
            "modelpool_route_rest_remaining_seconds",
            "Seconds left in the route's rest (0 when it is not resting).",
            labels=["route"],
        )
        for key in rt.catalog.routes:
            if not rt.catalog.route_status(key)[0]:
                continue  # switched off or not a candidate: not part of any walk
            current = gw.health.state(key, now).value
            for s in ROUTE_STATES:
                state.add_metric([key, s], 1.0 if s == current else 0.0)
            rest.add_metric([key], round(gw.health.rest_remaining(key, now), 3))
        yield state
        yield rest

    def _connections(self) -> Iterator[Metric]:
        opened, resent = self.gw.client.connection_counts()
        conns = CounterMetricFamily(
            "modelpool_upstream_connections", "Connections to upstreams this worker opened for attempts."
        )
        conns.add_metric([], float(opened))
        yield conns
        again = CounterMetricFamily(
            "modelpool_upstream_resent",
            "Requests this worker sent again at once on a fresh connection because the kept-alive one they "
            "went out on had been closed by the upstream (no byte of an answer): not retries, not failures.",
        )
        again.add_metric([], float(resent))
        yield again

    def _aggregators(self) -> Iterator[Metric]:
        status = self.gw.aggregators.status()
        age = GaugeMetricFamily(
            "modelpool_aggregator_stats_age_seconds",
            "Age of the loaded endpoint stats per aggregator kind and model (absent until first loaded).",
            labels=["aggregator", "model"],
        )
        ages: dict[tuple[str, str], float] = {}
        for agg in status["aggregators"]:
            for model, entry in agg["models"].items():
                if entry.get("age_s") is not None:
                    key = (agg["kind"], model)
                    ages[key] = max(ages.get(key, 0.0), float(entry["age_s"]))
        for (kind, model), value in ages.items():
            age.add_metric([kind, model], value)
        yield age
        failures = CounterMetricFamily(
            "modelpool_aggregator_stats_fetch_failures",
            "Failed fetches of aggregator endpoint stats since start.",
        )
        failures.add_metric([], float(status["fetch_failures"]))
        yield failures

    def _calendar(self) -> Metric:
        word = str(self.gw.calendar.status()["status"]).replace(" ", "_")
        family = GaugeMetricFamily(
            "modelpool_calendar_status",
            "1 for the holiday calendar's current status "
            "(synced | stale | failed | not_synced | bundled | off), else 0.",
            labels=["status"],
        )
        for s in CALENDAR_STATES:
            family.add_metric([s], 1.0 if s == word else 0.0)
        return family
