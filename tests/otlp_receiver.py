"""A real OTLP/HTTP trace receiver on loopback for the tracing tests: accepts `POST /v1/traces`, decodes the
protobuf `ExportTraceServiceRequest` with `opentelemetry-proto` and keeps the spans as plain dicts."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from redis_server import free_port


def _value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind is not None else None


class OtlpReceiver:
    """`with OtlpReceiver() as rx:` → `rx.endpoint` (the base URL for `tracing.otlp_endpoint`), `rx.spans`."""

    def __init__(self) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.spans: list[dict[str, Any]] = []
        self.requests = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    async def _traces(self, request: web.Request) -> web.Response:
        assert request.headers.get("content-type") == "application/x-protobuf"
        msg = ExportTraceServiceRequest()
        msg.ParseFromString(await request.read())
        self.requests += 1
        for rs in msg.resource_spans:
            resource = {a.key: _value(a.value) for a in rs.resource.attributes}
            for ss in rs.scope_spans:
                for span in ss.spans:
                    self.spans.append(
                        {
                            "name": span.name,
                            "trace_id": span.trace_id.hex(),
                            "span_id": span.span_id.hex(),
                            "parent_span_id": span.parent_span_id.hex(),
                            "kind": span.kind,
                            "attributes": {a.key: _value(a.value) for a in span.attributes},
                            "status": span.status.code,
                            "start": span.start_time_unix_nano,
                            "end": span.end_time_unix_nano,
                            "resource": resource,
                        }
                    )
        body = ExportTraceServiceResponse().SerializeToString()
        return web.Response(body=body, content_type="application/x-protobuf")

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        app = web.Application()
        app.router.add_post("/v1/traces", self._traces)
        self._runner = web.AppRunner(app)
        loop.run_until_complete(self._runner.setup())
        loop.run_until_complete(web.TCPSite(self._runner, "127.0.0.1", self.port).start())
        self._ready.set()
        loop.run_forever()
        loop.run_until_complete(self._runner.cleanup())
        loop.close()

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        assert self._ready.wait(10), "the OTLP receiver did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def wait_spans(self, count: int, timeout: float = 30.0) -> list[dict[str, Any]]:
        """Convergence wait (the bound only keeps a broken build from hanging)."""
        deadline = time.monotonic() + timeout
        while len(self.spans) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"{len(self.spans)} spans received, expected {count}")
            time.sleep(0.05)
        return list(self.spans)
