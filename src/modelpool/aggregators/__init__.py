"""Aggregator ranking (SPEC §6, the fastcel seed): fastest-first inner-provider order for gateway routes.

A `vercel` or `openrouter` route is one candidate for the pool, but behind it the aggregator chooses among
many inner providers. This package reads the aggregator's public endpoint stats, ranks the inner providers
(median throughput first, with demotions), injects the order into the upstream body, reads the gateway's
routing record back from the reply and explains what session affinity did.

    endpoints.py      the two endpoint-stats shapes → `EndpointStats`; stats URLs
    stats.py          fetch endpoint stats, `StatsCache` (stale-while-revalidate, one fetch, back-off)
    ranking.py        `rank()` → `Ranking` (order, table, best speed)
    inject.py         `inject_order()` for the request body
    routing_record.py `find_routing()` → `RoutingRecord`; `ServedBy` per-session memory + affinity
    service.py        `AggregatorService`: the one object the gateway holds
    priors.py         `CandidatePriors`: inner order and speed priors per candidate route
    cli_table.py      `render_rank()` for `modelpool rank`
"""

from __future__ import annotations

from modelpool.aggregators.cli_table import render_rank
from modelpool.aggregators.inject import inject_order
from modelpool.aggregators.ranking import RankEntry, Ranking, is_first_party, rank
from modelpool.aggregators.routing_record import (
    AffinityExplanation,
    ProviderAttempt,
    RoutingRecord,
    ServedBy,
    find_routing,
    inner_cache_lifetime,
    parse_routing,
    routing_from_sse_data,
)
from modelpool.aggregators.service import AggregatorService
from modelpool.aggregators.stats import (
    AGGREGATOR_KINDS,
    EndpointStats,
    ModelStats,
    StatsCache,
    StatsUnavailable,
    fetch_endpoint_stats,
    parse_endpoints,
    stats_root,
    stats_url,
)

__all__ = [
    "AGGREGATOR_KINDS",
    "AffinityExplanation",
    "AggregatorService",
    "EndpointStats",
    "ModelStats",
    "ProviderAttempt",
    "RankEntry",
    "Ranking",
    "RoutingRecord",
    "ServedBy",
    "StatsCache",
    "StatsUnavailable",
    "fetch_endpoint_stats",
    "find_routing",
    "inject_order",
    "inner_cache_lifetime",
    "is_first_party",
    "parse_endpoints",
    "parse_routing",
    "rank",
    "render_rank",
    "routing_from_sse_data",
    "stats_root",
    "stats_url",
]
