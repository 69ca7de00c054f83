"""OpenTelemetry traces (SPEC §1.2, optional extra `modelpool[otel]`): one span per client call and a
child span per upstream attempt, with the GenAI semantic conventions and modelpool's own attributes.

Imported only when the config has `tracing:` — without it no OpenTelemetry module is loaded and a call
pays one `is None` test per attempt.

With it, a call draws ids when it arrives and when each attempt starts (the attempt's id goes upstream in
`traceparent`), and notes the times; after the response went out, its spans are built as finished SDK
spans (`ReadableSpan`) with their attributes in one go and handed to the SDK's `BatchSpanProcessor`,
whose thread encodes and exports them (OTLP/HTTP) — a bounded queue, so a slow or dead collector costs
dropped spans, never a slower call. Building finished spans rather than running the SDK's live `Span`
API (a lock and a validation per attribute, a sampler call per span) costs a call a fraction of it:
`bench/tracing_cost.py`. Sampling is the SDK's `ParentBased(TraceIdRatioBased(sample))` rule.
"""

from __future__ import annotations

import logging
import random
import re
import time
from typing import TYPE_CHECKING, Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags, TraceState

from modelpool import __version__
from modelpool.upstream.client import AttemptFailure

if TYPE_CHECKING:
    from collections.abc import Mapping

    from modelpool.config.schema import TracingConfig
    from modelpool.observe.trace import CallTrace
    from modelpool.routing.call import Call, Candidate

log = logging.getLogger(__name__)
OPERATION = "chat"  # every ingress (chat completions, messages, responses) is a chat call in GenAI terms
EXPORT_TIMEOUT = 5.0  # seconds the exporter thread waits on a collector (calls never wait on it)
_TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$")
_LOW64 = (1 << 64) - 1
_SAMPLED, _NOT_SAMPLED = TraceFlags(TraceFlags.SAMPLED), TraceFlags(TraceFlags.DEFAULT)
_UNSET = Status(StatusCode.UNSET)


def traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL: a base (`http://collector:4318`) gets `/v1/traces`, a full URL is kept."""
    endpoint = endpoint.rstrip("/")
    return endpoint if endpoint.endswith("/v1/traces") else endpoint + "/v1/traces"


def parse_traceparent(value: str | None) -> tuple[int, int, bool] | None:
    """(trace id, parent span id, sampled) of a valid W3C `traceparent`, else None (a new trace)."""
    if not value:
        return None
    m = _TRACEPARENT.match(value.strip().lower())
    if m is None or m.group(1) == "ff" or (m.group(1) == "00" and m.group(5)):
        return None
    trace_id, span_id = int(m.group(2), 16), int(m.group(3), 16)
    if not trace_id or not span_id:
        return None
    return trace_id, span_id, bool(int(m.group(4), 16) & 1)


class Tracing:
    """The process's exporter: built from `tracing:` when the gateway starts, shut down (flushed) at close."""

    def __init__(self, config: TracingConfig) -> None:
        self.resource = Resource.create({"service.name": config.service_name, "service.version": __version__})
        self.scope = InstrumentationScope("modelpool", __version__)
        exporter = OTLPSpanExporter(endpoint=traces_url(config.otlp_endpoint), timeout=EXPORT_TIMEOUT)
        self.processor = BatchSpanProcessor(exporter)
        # TraceIdRatioBased: a new trace is kept when the low 64 bits of its id fall under the bound.
        self.bound = round(config.sample * (_LOW64 + 1))

    def begin(self, headers: Mapping[str, str]) -> CallSpans:
        parent = parse_traceparent(headers.get("traceparent"))
        if parent is not None:  # ParentBased: the client's decision stands
            trace_id, parent_id, sampled = parent
            state = headers.get("tracestate")
        else:
            trace_id, parent_id, state = random.getrandbits(128) or 1, 0, None
            sampled = (trace_id & _LOW64) < self.bound
        return CallSpans(self, trace_id, parent_id, sampled, state)

    def shutdown(self) -> None:
        try:
            self.processor.shutdown()
        except Exception:  # a collector that is gone must not fail the gateway's shutdown
            log.warning("tracing: could not flush the last spans", exc_info=True)


class _Attempt:
    __slots__ = ("cand", "end", "kind", "span_id", "start")

    def __init__(self, cand: Candidate) -> None:
        self.cand = cand
        self.span_id = random.getrandbits(64) or 1
        self.start = time.time_ns()
        self.end: int | None = None
        self.kind = "ok"


class CallSpans:
    """The spans of one client call, held on its `CallTrace` while the call runs: ids and times only."""

    __slots__ = ("attempts", "parent_id", "sampled", "span_id", "start", "state", "trace_id", "tracing")

    def __init__(
        self, tracing: Tracing, trace_id: int, parent_id: int, sampled: bool, state: str | None
    ) -> None:
        self.tracing = tracing
        self.trace_id = trace_id
        self.parent_id = parent_id
        self.sampled = sampled
        self.state = state
        self.span_id = random.getrandbits(64) or 1
        self.start = time.time_ns()
        self.attempts: list[_Attempt] = []

    def _headers(self, span_id: int) -> tuple[tuple[str, str], ...]:
        parent = f"00-{self.trace_id:032x}-{span_id:016x}-{'01' if self.sampled else '00'}"
        if self.state:
            return (("traceparent", parent), ("tracestate", self.state))
        return (("traceparent", parent),)

    def attempt_started(self, cand: Candidate, call: Call | None) -> _Attempt | None:
        if not self.sampled:
            # Not sampled: no attempt spans (nothing is exported), the call's context goes upstream.
            if call is not None and not call.trace_headers:
                call.trace_headers = self._headers(self.span_id)
            return None
        attempt = _Attempt(cand)
        self.attempts.append(attempt)
        if call is not None:
            call.trace_headers = self._headers(attempt.span_id)  # the upstream request continues it
        return attempt

    @staticmethod
    def attempt_ended(attempt: _Attempt | None, error: BaseException | None) -> None:
        if attempt is None:
            return
        attempt.end = time.time_ns()
        if error is None:
            return
        failure = getattr(error, "failure", error)  # a CommittedFailure carries the attempt's failure
        if isinstance(failure, AttemptFailure):
            attempt.kind = failure.kind.value
        else:
            attempt.kind = "cancelled" if type(error).__name__ == "CancelledError" else type(error).__name__

    def finish(self, trace: CallTrace, tokens: tuple[int | None, int | None]) -> None:
        """After the response went out: build the finished spans and queue them for export."""
        if not self.sampled:
            return
        end = time.time_ns()
        served_attempt = self._served_attempt(trace.served)
        processor = self.tracing.processor
        for attempt in self.attempts:
            processor.on_end(self._attempt_span(attempt, attempt is served_attempt, tokens, end))
        attrs, name = self._call_attributes(trace, served_attempt, tokens)
        status = Status(StatusCode.ERROR, trace.outcome) if trace.outcome != "ok" else _UNSET
        parent = None
        if self.parent_id:
            parent = SpanContext(self.trace_id, self.parent_id, True, _SAMPLED, self._trace_state())
        root = self._span(name, self.span_id, parent, SpanKind.SERVER, attrs, status, self.start, end)
        processor.on_end(root)

    def _call_attributes(
        self, trace: CallTrace, served: _Attempt | None, tokens: tuple[int | None, int | None]
    ) -> tuple[dict[str, Any], str]:
        call = trace.call
        state = trace.walker.state if trace.walker is not None else None
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": OPERATION,
            "modelpool.request_id": trace.request_id,
            "modelpool.ingress": trace.ingress,
            "modelpool.outcome": trace.outcome,
            "http.response.status_code": trace.status,
        }
        name = OPERATION
        if call is not None:
            name = f"{OPERATION} {call.requested_model}"
            attrs["gen_ai.request.model"] = call.requested_model
            attrs["modelpool.pool"] = call.pool.id
            attrs["modelpool.stream"] = call.stream
        if state is not None:
            attrs["modelpool.attempts"] = len(self.attempts)
            attrs["modelpool.switched"] = state.switched_from is not None
            if state.switched_from is not None:
                attrs["modelpool.switched_from"] = state.switched_from
            meta = state.metadata()
            for key in ("cost", "hedged"):  # set by the walk when it knows them
                value = meta.get(key)
                if isinstance(value, bool | int | float | str):
                    attrs[f"modelpool.{key}"] = value
        if served is not None:
            route = served.cand.route
            attrs["modelpool.route"] = served.cand.key
            attrs["gen_ai.provider.name"] = route.provider_id
            attrs["gen_ai.response.model"] = route.model_id
            _usage(attrs, tokens)
        if trace.outcome != "ok":
            attrs["error.type"] = trace.outcome
        return attrs, name

    def _attempt_span(
        self, attempt: _Attempt, served: bool, tokens: tuple[int | None, int | None], now: int
    ) -> ReadableSpan:
        route = attempt.cand.route
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": OPERATION,
            "gen_ai.provider.name": route.provider_id,
            "gen_ai.request.model": route.model_id,
            "modelpool.route": attempt.cand.key,
            "modelpool.attempt.kind": attempt.kind,
        }
        status = _UNSET
        if served:
            attrs["gen_ai.response.model"] = route.model_id
            _usage(attrs, tokens)
        if attempt.kind != "ok":
            attrs["error.type"] = attempt.kind
            status = Status(StatusCode.ERROR, attempt.kind)
        parent = SpanContext(self.trace_id, self.span_id, False, _SAMPLED, self._trace_state())
        name = f"{OPERATION} {route.model_id}"
        end = attempt.end or now
        return self._span(name, attempt.span_id, parent, SpanKind.CLIENT, attrs, status, attempt.start, end)

    def _span(
        self,
        name: str,
        span_id: int,
        parent: SpanContext | None,
        kind: SpanKind,
        attrs: dict[str, Any],
        status: Status,
        start: int,
        end: int,
    ) -> ReadableSpan:
        context = SpanContext(self.trace_id, span_id, False, _SAMPLED, self._trace_state())
        return ReadableSpan(
            name,
            context=context,
            parent=parent,
            resource=self.tracing.resource,
            attributes=attrs,
            kind=kind,
            status=status,
            start_time=start,
            end_time=end,
            instrumentation_scope=self.tracing.scope,
        )

    def _trace_state(self) -> TraceState | None:
        return TraceState.from_header([self.state]) if self.state else None

    def _served_attempt(self, served: str | None) -> _Attempt | None:
        if served is None:
            return None
        for attempt in reversed(self.attempts):
            if attempt.kind == "ok" and attempt.cand.key == served:
                return attempt
        return None


def _usage(attrs: dict[str, Any], tokens: tuple[int | None, int | None]) -> None:
    tin, tout = tokens
    if tin is not None:
        attrs["gen_ai.usage.input_tokens"] = tin
    if tout is not None:
        attrs["gen_ai.usage.output_tokens"] = tout
