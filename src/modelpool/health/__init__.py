"""Route health: failure classification, rests and the per-route health registry (SPEC §5)."""

from modelpool.health.classify import (
    FailureKind,
    classify,
    counts_against_route,
    error_text,
    parse_retry_after,
    retryable,
)
from modelpool.health.registry import HealthRegistry, RouteHealth, RouteState
from modelpool.health.rests import exponential_rest, quota_rest_until, rest_horizon

__all__ = [
    "FailureKind",
    "HealthRegistry",
    "RouteHealth",
    "RouteState",
    "classify",
    "counts_against_route",
    "error_text",
    "exponential_rest",
    "parse_retry_after",
    "quota_rest_until",
    "rest_horizon",
    "retryable",
]
