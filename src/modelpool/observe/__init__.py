"""Observability: Prometheus metrics (`GET /metrics`) and the one log line per client call.

`Observer` is the gateway's single entry point: `begin()` when a client call arrives, `done()` when it
ended (whatever the outcome), `render()` for a scrape.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from modelpool import logs
from modelpool.observe.collector import GatewayCollector
from modelpool.observe.history import session_entry, session_record
from modelpool.observe.metrics import Flusher, Tally, multiprocess_dir
from modelpool.observe.trace import CallTrace, call_usage, usage_tokens

if TYPE_CHECKING:
    from modelpool.engine import Engine

__all__ = ["CallTrace", "Observer"]

call_log = logging.getLogger("modelpool.calls")


class _Scrape(Collector):
    def __init__(self, tally: Tally) -> None:
        self.tally = tally

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        return self.tally.families()


class Observer:
    FLUSH_DELAY = 1.0  # multiprocess: a call's numbers reach the shared files within this many seconds

    def __init__(self, gw: Engine) -> None:
        self.gw = gw
        self.mp_dir = multiprocess_dir()
        self.tally = Tally()
        self.in_flight = self.tally.in_flight
        self.tracing: Any = None  # `observe.otel.Tracing` once the gateway started with `tracing:`
        self._collector = GatewayCollector(gw)
        self._flusher = Flusher(self.tally) if self.mp_dir else None
        self._flush_pending = False
        self.registry = CollectorRegistry(auto_describe=False)
        if self._flusher is None:
            self.registry.register(_Scrape(self.tally))
        else:
            from prometheus_client import multiprocess

            multiprocess.MultiProcessCollector(self.registry, path=self.mp_dir)
        self.registry.register(self._collector)
        gw.history.describe = session_entry  # the session history book describes our records later
        self._history = gw.history.pending

    def begin(self, ingress: str, headers: Mapping[str, str]) -> CallTrace:
        trace = CallTrace(ingress, headers)
        if self.tracing is not None:
            trace.otel = self.tracing.begin(headers)
        return trace

    def start_tracing(self, config: Any) -> None:
        """`tracing:` in the config: load OpenTelemetry (the `otel` extra) and export spans; absent, nothing
        of it is imported."""
        if config is None or self.tracing is not None:
            return
        try:
            from modelpool.observe.otel import Tracing
        except ImportError as exc:  # a missing extra must not take the gateway down: say so, serve
            logging.getLogger("modelpool.observe").error(
                "tracing is configured but OpenTelemetry is missing (pip install 'modelpool[otel]'): %s",
                exc,
            )
            return
        self.tracing = Tracing(config)

    def stop_tracing(self) -> None:
        tracing, self.tracing = self.tracing, None
        if tracing is not None:
            tracing.shutdown()

    def done(self, trace: CallTrace) -> None:
        try:
            trace.end()
            if trace.served is not None:
                _estimate_if_unreported(trace)
            self.tally.record(trace)
            self.gw.accounts.finish(trace.key, trace.ticket, trace.walker, trace.served)
            record = session_record(trace)  # SPEC §8: plain values, described and stored in the background
            if record is not None:
                self._history.append(record)
            if trace.otel is not None:
                trace.otel.finish(trace, usage_tokens(trace) if trace.served else (None, None))
            if call_log.isEnabledFor(logging.INFO):
                fast = logs.fast_call_line
                if fast is not None:
                    fast(call_fields(trace))
                else:
                    call_log.info("call", extra={"call": call_fields(trace)})
            if self._flusher is not None and not self._flush_pending:
                self._schedule_flush()
        except Exception:  # the answer already went out: bookkeeping must never turn it into an error
            logging.getLogger("modelpool.observe").exception("recording call %s failed", trace.request_id)

    def _schedule_flush(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        self._flush_pending = True
        loop.call_later(self.FLUSH_DELAY, self.flush)

    def flush(self) -> None:
        """Multiprocess mode: write this worker's new numbers to the shared directory now."""
        self._flush_pending = False
        if self._flusher is not None:
            self._flusher.flush()

    def render(self) -> bytes:
        self.flush()  # this worker's latest numbers, at least
        return generate_latest(self.registry)

    def close(self) -> None:
        if self.mp_dir:
            from prometheus_client import multiprocess

            self.flush()
            multiprocess.mark_process_dead(os.getpid(), self.mp_dir)  # drops this worker's live gauges


def _estimate_if_unreported(trace: CallTrace) -> None:
    """A served call no attempt reported usage for: estimate it from the text (SPEC §14)."""
    state: Any = getattr(trace.walker, "state", None)
    record = getattr(state, "estimate", None)  # a walk's state (not a stand-in without one)
    if record is None or state.usage is not None or trace.call is None or trace.served is None:
        return
    estimate = getattr(trace.relay, "output_estimate", None)
    output = estimate() if estimate is not None else 0
    record(trace.served, trace.call.est_tokens, output)


def call_fields(trace: CallTrace) -> dict[str, Any]:
    """The call's log line: what was asked, what the walk did, how long it took. No message texts (an
    upstream error may echo a credential), no bodies, no keys."""
    call = trace.call
    walker = trace.walker
    state = walker.state if walker is not None else None
    usage = call_usage(trace)
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
        "hedged": getattr(state, "hedged", None),
        "effort": state.effort if state is not None else None,
        "dropped": getattr(state, "dropped", None) or None,
        # SPEC §14, one meaning on every path: all input tokens (cache reads and writes included), the
        # cached part again on its own; summed over the attempts that reported usage.
        "tokens_in": usage["prompt_tokens"] if usage else None,
        "tokens_cached": usage["cached_tokens"] if usage else None,
        "tokens_cache_write": usage["cache_creation_tokens"] if usage else None,
        "tokens_out": usage["completion_tokens"] if usage else None,
        "usage_estimated": True if getattr(state, "estimated", False) else None,
        "ttft_ms": round(ttft * 1000, 1) if ttft is not None else None,
        "key": trace.key,
        "cost_usd": round(cost, 10) if (cost := getattr(state, "cost", None)) is not None else None,
        "total_ms": round(trace.total * 1000, 1),
    }
