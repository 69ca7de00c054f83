"""Observability: Prometheus metrics (`GET /metrics`) and the one log line per client call.

`Observer` is the gateway's single entry point: `begin()` when a client call arrives, `done()` when it
ended (whatever the outcome), `render()` for a scrape.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, generate_latest

from modelpool.observe.collector import GatewayCollector
from modelpool.observe.metrics import Metrics, multiprocess_dir
from modelpool.observe.trace import CallTrace, usage_tokens

if TYPE_CHECKING:
    from modelpool.gateway import Gateway

__all__ = ["CallTrace", "Observer"]

call_log = logging.getLogger("modelpool.calls")


class Observer:
    def __init__(self, gw: Gateway) -> None:
        self.mp_dir = multiprocess_dir()
        self._collector = GatewayCollector(gw)
        if self.mp_dir:
            # Values live in the shared directory; a scrape builds a fresh registry that sums them.
            self.registry = None
            self.metrics = Metrics(None)
        else:
            self.registry = CollectorRegistry(auto_describe=False)
            self.metrics = Metrics(self.registry)
            self.registry.register(self._collector)
        self.in_flight = self.metrics.in_flight

    def begin(self, ingress: str, headers: Mapping[str, str]) -> CallTrace:
        return CallTrace(ingress, headers)

    def done(self, trace: CallTrace) -> None:
        try:
            trace.end()
            self.metrics.record(trace)
            if call_log.isEnabledFor(logging.INFO):
                call_log.info("call", extra={"call": call_fields(trace)})
        except Exception:  # the answer already went out: bookkeeping must never turn it into an error
            logging.getLogger("modelpool.observe").exception("recording call %s failed", trace.request_id)

    def render(self) -> bytes:
        if self.registry is not None:
            return generate_latest(self.registry)
        from prometheus_client import multiprocess

        registry = CollectorRegistry(auto_describe=False)
        multiprocess.MultiProcessCollector(registry, path=self.mp_dir)
        registry.register(self._collector)
        return generate_latest(registry)

    def close(self) -> None:
        if self.mp_dir:
            from prometheus_client import multiprocess

            multiprocess.mark_process_dead(os.getpid(), self.mp_dir)  # drops this worker's live gauges


def call_fields(trace: CallTrace) -> dict[str, Any]:
    """The call's log line: what was asked, what the walk did, how long it took. No message texts (an
    upstream error may echo a credential), no bodies, no keys."""
    call = trace.call
    walker = trace.walker
    state = walker.state if walker is not None else None
    tin, tout = usage_tokens(trace.relay) if trace.served else (None, None)
    ttft = trace.ttft
    return {
        "request_id": trace.request_id,
        "dialect": trace.ingress,
        "pool": call.pool.id if call is not None else None,
        "model": call.requested_model if call is not None else None,
        "stream": call.stream if call is not None else None,
        "status": trace.status,
        "outcome": trace.outcome,
        "route": trace.served,
        "attempts": [{"route": a.route, "kind": a.kind, "status": a.status} for a in trace.attempts],
        "switched_from": state.switched_from if state is not None else None,
        "effort": state.effort if state is not None else None,
        "tokens_in": tin,
        "tokens_out": tout,
        "ttft_ms": round(ttft * 1000, 1) if ttft is not None else None,
        "total_ms": round(trace.total * 1000, 1),
    }
