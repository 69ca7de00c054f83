"""What the routing core asks of the aggregator service, per candidate route: the inner-provider order to
inject and the published speed priors. Routes that are not aggregators answer None, so callers need no
special case. Kept apart from `service.py`, which knows stats and ranking but not routes or candidates."""

from __future__ import annotations

from typing import Any

from modelpool.aggregators.service import AggregatorService


class CandidatePriors:
    def __init__(self, service: AggregatorService) -> None:
        self.service = service

    def inner_order(self, call: Any, cand: Any) -> list[str] | None:
        """The aggregator's inner providers fastest first, or None (ranking off / stats unavailable)."""
        ep = cand.endpoint
        return self.service.order_for(
            ep.kind, ep.root, ep.api_key, cand.route.model_id, call.has_tools, call.est_tokens
        )

    def prior_tps(self, cand: Any) -> float | None:
        ep = cand.endpoint
        if not ep.aggregator:
            return None
        return self.service.prior_tps(ep.kind, cand.route.model_id, ep.root, ep.api_key)

    def prior_ttft(self, cand: Any) -> float | None:
        ep = cand.endpoint
        if not ep.aggregator:
            return None
        ms = self.service.prior_ttft_ms(ep.kind, cand.route.model_id, ep.root, ep.api_key)
        return ms / 1000.0 if ms is not None else None

    def warm(self, runtime: Any) -> None:
        """Start fetching every aggregator route's endpoint stats now (in the background), so the first
        conversation is ranked too: a call never waits for stats (SPEC §6), it would go out unranked."""
        if not any(ep.aggregator for ep in runtime.endpoints.values()):
            return  # no aggregator: no need to walk every route (10,000 of them on the loop, issue #21)
        for route in runtime.catalog.routes.values():
            ep = runtime.endpoints.get(route.provider_id)
            if ep is not None and ep.aggregator and runtime.catalog.route_status(route)[0]:
                self.service.prior_tps(ep.kind, route.model_id, ep.root, ep.api_key)
