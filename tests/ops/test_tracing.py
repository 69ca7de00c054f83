"""OpenTelemetry traces (SPEC §1.2, issue #20) against a real OTLP/HTTP receiver: the real server, the
official OpenAI SDK, the simulated fleet. Spans are read after the gateway stopped (its shutdown flushes
the batch processor), so no test waits on the export schedule."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import openai
import pytest

from gateway_server import GatewayServer
from modelpool.sim import Fault, FleetThread
from otlp_receiver import OtlpReceiver
from redis_server import free_port
from support import base_config

CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"
SERVER, CLIENT = 2, 3  # protobuf Span.SpanKind
ERROR = 2  # protobuf Status.StatusCode


def traced_config(fleet: FleetThread, endpoint: str, **tracing: Any) -> dict[str, Any]:
    cfg = base_config(fleet, retries_per_route=0)
    cfg["tracing"] = {"otlp_endpoint": endpoint, "service_name": "gw-under-test", **tracing}
    return cfg


def sdk(gw: GatewayServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.url + "/v1", api_key="unused", max_retries=0, timeout=30)


def chat(gw: GatewayServer, traceparent: str | None = TRACEPARENT, stream: bool = False) -> Any:
    headers = {"traceparent": traceparent, "tracestate": "vendor=abc"} if traceparent else {}
    messages = [{"role": "user", "content": "hello"}]
    client = sdk(gw)
    if stream:
        chunks = client.chat.completions.create(
            model="m1",
            messages=messages,  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
            extra_headers=headers,
        )
        return [c for c in chunks]
    return client.chat.completions.create(model="m1", messages=messages, extra_headers=headers)  # type: ignore[arg-type]


def split(spans: list[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    (root,) = [s for s in spans if s["kind"] == SERVER]
    children = sorted((s for s in spans if s["kind"] == CLIENT), key=lambda s: s["start"])
    return root, children


def upstream_traceparent(fleet: FleetThread, provider: str) -> tuple[str, str, str]:
    (record,) = fleet.calls(provider)
    version, trace_id, parent, flags = record.headers["traceparent"].split("-")
    assert version == "00"
    return trace_id, parent, flags


def test_a_plain_call_is_one_span_with_one_attempt_child_and_the_client_trace_goes_upstream(
    fleet: FleetThread,
) -> None:
    with OtlpReceiver() as rx:
        with GatewayServer(traced_config(fleet, rx.endpoint)) as gw:
            reply = chat(gw)
        root, children = split(rx.wait_spans(2))
    assert root["name"] == "chat m1"
    assert root["trace_id"] == CLIENT_TRACE and root["parent_span_id"] == CLIENT_SPAN  # continued
    assert root["resource"]["service.name"] == "gw-under-test"
    attrs = root["attributes"]
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.request.model"] == "m1"
    assert attrs["gen_ai.response.model"] == "m1"
    assert attrs["gen_ai.provider.name"] == "alpha"
    assert attrs["modelpool.route"] == "alpha/m1"
    assert attrs["modelpool.switched"] is False
    assert attrs["modelpool.stream"] is False
    assert attrs["gen_ai.usage.input_tokens"] == reply.usage.prompt_tokens
    assert attrs["gen_ai.usage.output_tokens"] == reply.usage.completion_tokens
    assert "modelpool.cost" not in attrs  # nothing in the walk's metadata knows a cost here
    (attempt,) = children
    assert attempt["trace_id"] == CLIENT_TRACE and attempt["parent_span_id"] == root["span_id"]
    assert attempt["attributes"]["modelpool.attempt.kind"] == "ok"
    assert attempt["attributes"]["modelpool.route"] == "alpha/m1"
    assert attempt["attributes"]["gen_ai.provider.name"] == "alpha"
    assert root["start"] <= attempt["start"] <= attempt["end"] <= root["end"]
    # The upstream request carries the trace: the client's trace id, the attempt span as its parent.
    assert upstream_traceparent(fleet, "alpha") == (CLIENT_TRACE, attempt["span_id"], "01")
    assert fleet.calls("alpha")[0].headers["tracestate"] == "vendor=abc"  # vendor state travels along


def test_a_streamed_call_records_its_usage(fleet: FleetThread) -> None:
    with OtlpReceiver() as rx:
        with GatewayServer(traced_config(fleet, rx.endpoint)) as gw:
            chunks = chat(gw, stream=True)
        root, children = split(rx.wait_spans(2))
    usage = chunks[-1].usage
    attrs = root["attributes"]
    assert attrs["modelpool.stream"] is True
    assert attrs["modelpool.route"] == "alpha/m1"
    assert attrs["gen_ai.usage.input_tokens"] == usage.prompt_tokens
    assert attrs["gen_ai.usage.output_tokens"] == usage.completion_tokens == 6
    (attempt,) = children
    assert attempt["attributes"]["modelpool.attempt.kind"] == "ok"
    assert attempt["attributes"]["gen_ai.usage.output_tokens"] == 6
    assert upstream_traceparent(fleet, "alpha")[:2] == (CLIENT_TRACE, attempt["span_id"])


@pytest.mark.parametrize("stream", [False, True])
def test_a_failover_has_two_attempt_children_the_first_marked_with_its_failure_kind(
    fleet: FleetThread, stream: bool
) -> None:
    fleet.set_faults("alpha", [Fault("server_error")])
    with OtlpReceiver() as rx:
        with GatewayServer(traced_config(fleet, rx.endpoint)) as gw:
            chat(gw, stream=stream)
        root, children = split(rx.wait_spans(3))
    assert root["attributes"]["modelpool.switched"] is True
    assert root["attributes"]["modelpool.switched_from"] == "alpha/m1"
    assert root["attributes"]["modelpool.route"] == "beta/m1"
    assert root["attributes"]["gen_ai.provider.name"] == "beta"
    assert root["status"] != ERROR
    first, second = children
    assert (first["attributes"]["modelpool.route"], first["attributes"]["modelpool.attempt.kind"]) == (
        "alpha/m1",
        "server",
    )
    assert first["status"] == ERROR and first["attributes"]["error.type"] == "server"
    assert (second["attributes"]["modelpool.route"], second["attributes"]["modelpool.attempt.kind"]) == (
        "beta/m1",
        "ok",
    )
    assert {c["parent_span_id"] for c in children} == {root["span_id"]}
    # Each upstream request names its own attempt span as the parent.
    assert upstream_traceparent(fleet, "alpha")[:2] == (CLIENT_TRACE, first["span_id"])
    assert upstream_traceparent(fleet, "beta")[:2] == (CLIENT_TRACE, second["span_id"])


def test_sample_zero_exports_nothing(fleet: FleetThread) -> None:
    with OtlpReceiver() as rx:
        with GatewayServer(traced_config(fleet, rx.endpoint, sample=0)) as gw:
            for stream in (False, True, False):
                chat(gw, traceparent=None, stream=stream)
        assert rx.spans == [] and rx.requests == 0
    # The trace context still goes upstream, with the sampled bit off.
    flags = [int(r.headers["traceparent"].split("-")[3], 16) for r in fleet.calls("alpha")]
    assert len(flags) == 3 and not any(f & 1 for f in flags)


def test_sample_one_without_a_client_trace_starts_a_new_one(fleet: FleetThread) -> None:
    with OtlpReceiver() as rx:
        with GatewayServer(traced_config(fleet, rx.endpoint, sample=1.0)) as gw:
            chat(gw, traceparent=None)
        root, (attempt,) = split(rx.wait_spans(2))
    assert root["parent_span_id"] == "" and root["trace_id"] != CLIENT_TRACE
    trace_id, parent, flags = upstream_traceparent(fleet, "alpha")
    assert (trace_id, parent) == (root["trace_id"], attempt["span_id"]) and int(flags, 16) & 1  # sampled


def test_a_closed_collector_port_leaves_calls_working(fleet: FleetThread) -> None:
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    fleet.set_faults("alpha", [Fault("server_error", times=1)])
    with GatewayServer(traced_config(fleet, dead)) as gw:
        for i in range(20):
            stream = i % 2 == 1
            result = chat(gw, stream=stream)
            text = "".join(c.choices[0].delta.content or "" for c in result if c.choices) if stream else None
            assert text if stream else result.choices[0].message.content
    assert len(fleet.calls("alpha")) + len(fleet.calls("beta")) == 21  # one failover, twenty answers


def test_without_tracing_nothing_of_opentelemetry_is_imported(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import asyncio, sys
        sys.path.insert(0, "tests")
        from modelpool.gateway import Gateway
        from modelpool.sim import FleetThread
        from support import base_config, two_route_spec

        async def main(cfg):
            async with Gateway.from_config(cfg) as gw:
                reply = await gw.chat({"model": "m1", "messages": [{"role": "user", "content": "hi"}]})
                assert reply["choices"][0]["message"]["content"]

        with FleetThread(two_route_spec()) as ft:
            asyncio.run(main(base_config(ft)))
        loaded = sorted(m for m in sys.modules if m.startswith("opentelemetry"))
        print("LOADED", loaded)
        """
    )
    root = Path(__file__).resolve().parents[2]
    cmd = [sys.executable, "-c", script]
    out = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "LOADED []" in out.stdout, out.stdout
