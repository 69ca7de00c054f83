"""OpenTelemetry traces (SPEC §1.2, optional extra `modelpool[otel]`): one span per client call and a
child span per upstream attempt, with the GenAI semantic conventions and modelpool's own attributes.

Imported only when the config has `tracing:` — without it no OpenTelemetry module is loaded and a call
pays one `is None` test per attempt. With it, a call costs: starting the call span when it arrives (so
the client's `traceparent` is continued and each attempt's context can go upstream), starting one span
per attempt, and after the response went out, filling in the attributes and ending the spans with the
times they were measured at. Export is the SDK's `BatchSpanProcessor`: a bounded queue and a thread, so
a slow or dead collector costs dropped spans, never a slower call.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from opentelemetry import trace as otel_trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

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
_PROPAGATOR = TraceContextTextMapPropagator()


def traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL: a base (`http://collector:4318`) gets `/v1/traces`, a full URL is kept."""
    endpoint = endpoint.rstrip("/")
    return endpoint if endpoint.endswith("/v1/traces") else endpoint + "/v1/traces"


class Tracing:
    """The process's tracer: built from `tracing:` when the gateway starts, shut down (flushed) at close."""

    def __init__(self, config: TracingConfig) -> None:
        resource = Resource.create({"service.name": config.service_name, "service.version": __version__})
        sampler = ParentBased(TraceIdRatioBased(config.sample))  # a sampled client trace stays sampled
        self.provider = TracerProvider(resource=resource, sampler=sampler)
        exporter = OTLPSpanExporter(endpoint=traces_url(config.otlp_endpoint), timeout=EXPORT_TIMEOUT)
        self.provider.add_span_processor(BatchSpanProcessor(exporter))
        self.tracer = self.provider.get_tracer("modelpool", __version__)

    def begin(self, headers: Mapping[str, str]) -> CallSpans:
        parent = _PROPAGATOR.extract(headers) if "traceparent" in headers else None
        span = self.tracer.start_span(OPERATION, context=parent, kind=SpanKind.SERVER)
        return CallSpans(self.tracer, span)

    def shutdown(self) -> None:
        try:
            self.provider.shutdown()
        except Exception:  # a collector that is gone must not fail the gateway's shutdown
            log.warning("tracing: could not flush the last spans", exc_info=True)


class _Attempt:
    __slots__ = ("cand", "end", "kind", "span")

    def __init__(self, span: Any, cand: Candidate) -> None:
        self.span = span
        self.cand = cand
        self.end: int | None = None
        self.kind = "ok"


class CallSpans:
    """The spans of one client call, held on its `CallTrace` while the call runs."""

    __slots__ = ("attempts", "recording", "root", "tracer")

    def __init__(self, tracer: Any, root: Any) -> None:
        self.tracer = tracer
        self.root = root
        self.recording: bool = root.is_recording()  # False: not sampled, only the context goes upstream
        self.attempts: list[_Attempt] = []

    def attempt_started(self, cand: Candidate, call: Call | None) -> _Attempt | None:
        if not self.recording:
            # Not sampled: no attempt spans (they would not be either), the call's context goes upstream.
            if call is not None and not call.trace_headers:
                call.trace_headers = _headers(self.root)
            return None
        ctx = otel_trace.set_span_in_context(self.root)
        span = self.tracer.start_span(f"{OPERATION} {cand.route.model_id}", context=ctx, kind=SpanKind.CLIENT)
        attempt = _Attempt(span, cand)
        self.attempts.append(attempt)
        if call is not None:
            call.trace_headers = _headers(span)  # the upstream request continues this attempt's trace
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
        """After the response went out: the attributes, then the spans end at the times measured."""
        if not self.recording:
            return
        call, served = trace.call, trace.served
        state = trace.walker.state if trace.walker is not None else None
        meta = state.metadata() if state is not None else {}
        root = self.root
        root.set_attribute("gen_ai.operation.name", OPERATION)
        root.set_attribute("modelpool.request_id", trace.request_id)
        root.set_attribute("modelpool.ingress", trace.ingress)
        root.set_attribute("modelpool.outcome", trace.outcome)
        root.set_attribute("http.response.status_code", trace.status)
        if call is not None:
            root.update_name(f"{OPERATION} {call.requested_model}")
            root.set_attribute("gen_ai.request.model", call.requested_model)
            root.set_attribute("modelpool.pool", call.pool.id)
            root.set_attribute("modelpool.stream", call.stream)
        if state is not None:
            root.set_attribute("modelpool.attempts", len(self.attempts))
            root.set_attribute("modelpool.switched", state.switched_from is not None)
            if state.switched_from is not None:
                root.set_attribute("modelpool.switched_from", state.switched_from)
        for name in ("cost", "hedged"):  # set by the walk when it knows them
            value = meta.get(name)
            if isinstance(value, bool | int | float | str):
                root.set_attribute(f"modelpool.{name}", value)
        served_attempt = self._served_attempt(served)
        if served_attempt is not None:
            route = served_attempt.cand.route
            root.set_attribute("modelpool.route", served)
            root.set_attribute("gen_ai.provider.name", route.provider_id)
            root.set_attribute("gen_ai.response.model", route.model_id)
            _usage(root, tokens)
            _usage(served_attempt.span, tokens)
        for attempt in self.attempts:
            _end_attempt(attempt, attempt is served_attempt)
        if trace.outcome != "ok":
            root.set_status(Status(StatusCode.ERROR, trace.outcome))
            root.set_attribute("error.type", trace.outcome)
        root.end(end_time=time.time_ns())

    def _served_attempt(self, served: str | None) -> _Attempt | None:
        if served is None:
            return None
        for attempt in reversed(self.attempts):
            if attempt.kind == "ok" and attempt.cand.key == served:
                return attempt
        return None


def _end_attempt(attempt: _Attempt, served: bool) -> None:
    span, route = attempt.span, attempt.cand.route
    span.set_attribute("gen_ai.operation.name", OPERATION)
    span.set_attribute("gen_ai.provider.name", route.provider_id)
    span.set_attribute("gen_ai.request.model", route.model_id)
    span.set_attribute("modelpool.route", attempt.cand.key)
    span.set_attribute("modelpool.attempt.kind", attempt.kind)
    if served:
        span.set_attribute("gen_ai.response.model", route.model_id)
    if attempt.kind != "ok":
        span.set_attribute("error.type", attempt.kind)
        span.set_status(Status(StatusCode.ERROR, attempt.kind))
    span.end(end_time=attempt.end)


def _headers(span: Any) -> tuple[tuple[str, str], ...]:
    """W3C trace context headers naming `span` as the parent."""
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier, otel_trace.set_span_in_context(span))
    return tuple(carrier.items())


def _usage(span: Any, tokens: tuple[int | None, int | None]) -> None:
    tin, tout = tokens
    if tin is not None:
        span.set_attribute("gen_ai.usage.input_tokens", tin)
    if tout is not None:
        span.set_attribute("gen_ai.usage.output_tokens", tout)
