"""`GET /metrics` after scripted traffic: the real server, the simulated fleet, the official SDKs as clients,
and prometheus_client's own text parser on the scrape."""

from __future__ import annotations

import time

import anthropic
import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from gateway_server import ADMIN_TOKEN, GatewayServer, free_port
from modelpool.sim import Fault, FleetThread, demo_fleet
from support import base_config

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(url: str, token: str = ADMIN_TOKEN) -> Samples:
    resp = httpx.get(url + "/metrics", headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("text/plain")
    out: Samples = {}
    for family in text_string_to_metric_families(resp.text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def names(samples: Samples) -> set[str]:
    return {name for name, _ in samples}


def test_scripted_traffic_shows_up_as_the_expected_series(fleet: FleetThread) -> None:
    # alpha heads the priority order and fails twice (one try + one retry): the walk switches to beta.
    fleet.set_faults("alpha", [Fault("server_error", times=2)])
    with GatewayServer(base_config(fleet, retries_per_route=1)) as gw:
        oa = openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0)
        an = anthropic.Anthropic(base_url=gw.url, api_key="x", max_retries=0)
        msgs = [{"role": "user", "content": "hello"}]
        first = oa.chat.completions.with_raw_response.create(model="m1", messages=msgs)  # type: ignore[arg-type]
        assert first.headers["x-modelpool-switched"].startswith("alpha/m1 → beta/m1")
        assert first.headers["x-request-id"]
        with_usage = oa.chat.completions.create(
            model="m1",
            messages=msgs,
            stream=True,
            stream_options={"include_usage": True},  # type: ignore[arg-type]
        )
        assert "".join(c.choices[0].delta.content or "" for c in with_usage if c.choices)
        no_usage = oa.chat.completions.create(model="m1", messages=msgs, stream=True)  # type: ignore[arg-type]
        assert "".join(c.choices[0].delta.content or "" for c in no_usage if c.choices)
        reply = an.messages.create(model="m1", max_tokens=64, messages=msgs)  # type: ignore[arg-type]
        assert reply.content
        with an.messages.stream(model="m1", max_tokens=64, messages=msgs) as stream:  # type: ignore[arg-type]
            assert "".join(stream.text_stream)
        unknown = httpx.post(
            gw.url + "/v1/chat/completions", json={"model": "no-such-model", "messages": msgs}, timeout=10
        )
        assert unknown.status_code == 404 and unknown.headers["x-request-id"]
        # Now every route fails twice: beta (healthy, first) then alpha (resting, tried anyway) → 502.
        fleet.set_faults("beta", [Fault("server_error", times=2)])
        fleet.set_faults("alpha", [Fault("server_error", times=2)])
        failed = httpx.post(
            gw.url + "/v1/chat/completions",
            json={"model": "m1", "messages": [{"role": "user", "content": "again"}]},
            headers={"x-request-id": "rid-failed-1"},
            timeout=10,
        )
        assert failed.status_code == 502
        assert failed.headers["x-request-id"] == "rid-failed-1"
        m = scrape(gw.url)

    requests = "modelpool_requests_total"
    assert value(m, requests, dialect="openai", pool="m1", route="beta/m1", outcome="ok") == 3
    assert value(m, requests, dialect="anthropic", pool="m1", route="beta/m1", outcome="ok") == 2
    assert value(m, requests, dialect="openai", pool="", route="", outcome="rejected") == 1
    assert value(m, requests, dialect="openai", pool="m1", route="", outcome="failed") == 1

    attempts = "modelpool_attempts_total"
    assert value(m, attempts, route="beta/m1", kind="ok") == 5
    assert value(m, attempts, route="alpha/m1", kind="server") == 4
    assert value(m, attempts, route="beta/m1", kind="server") == 2
    assert value(m, attempts, route="alpha/m1", kind="ok") is None

    switches = "modelpool_switches_total"
    assert value(m, switches, from_route="alpha/m1", to_route="beta/m1", kind="server") == 1
    assert value(m, switches, from_route="beta/m1", to_route="alpha/m1", kind="server") == 1

    assert value(m, "modelpool_ttft_seconds_count", route="beta/m1") == 3  # the three streams
    assert value(m, "modelpool_request_duration_seconds_count", route="beta/m1") == 5
    assert value(m, "modelpool_gateway_overhead_seconds_count", dialect="openai") == 3
    assert value(m, "modelpool_gateway_overhead_seconds_count", dialect="anthropic") == 2
    ttft_sum = value(m, "modelpool_ttft_seconds_sum", route="beta/m1")
    total_sum = value(m, "modelpool_request_duration_seconds_sum", route="beta/m1")
    assert ttft_sum is not None and total_sum is not None and 0 < ttft_sum < total_sum

    # 6 output tokens per reply, the OpenAI stream that did not ask for usage included (SPEC §14).
    assert value(m, "modelpool_output_tokens_total", route="beta/m1") == 5 * 6
    tokens_in = value(m, "modelpool_input_tokens_total", route="beta/m1")
    assert tokens_in is not None and tokens_in > 0

    assert value(m, "modelpool_in_flight", route="beta/m1") == 0
    assert value(m, "modelpool_in_flight", route="alpha/m1") == 0
    # Both routes rest after the failed walk; the scrape computes state and rest at that moment.
    assert value(m, "modelpool_route_state", route="alpha/m1", state="unavailable") == 1
    assert value(m, "modelpool_route_state", route="alpha/m1", state="ok") == 0
    rest = value(m, "modelpool_route_rest_remaining_seconds", route="alpha/m1")
    assert rest is not None and 0 < rest <= 60 * 2
    assert value(m, "modelpool_calendar_status", status="bundled") == 1
    assert value(m, "modelpool_calendar_status", status="synced") == 0
    assert value(m, "modelpool_aggregator_stats_fetch_failures_total") == 0
    # No session or request id ever becomes a label.
    labels = {k for _, pairs in m for k, _ in pairs}
    assert labels <= {"dialect", "pool", "route", "outcome", "kind", "from_route", "to_route", "le"} | {
        "state",
        "status",
        "aggregator",
        "model",
        "version",
    }


def test_a_client_that_hangs_up_is_counted_as_cancelled(fleet: FleetThread) -> None:
    fleet.set_faults("alpha", [Fault("stall", times=1, delay=5.0)])
    body = {"model": "m1", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    key = {"dialect": "openai", "pool": "m1", "route": "", "outcome": "cancelled"}
    with GatewayServer(base_config(fleet)) as gw:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(gw.url + "/v1/chat/completions", json=body, timeout=0.5)
        m: Samples = {}
        for _ in range(100):  # the gateway notices the hang-up asynchronously
            m = scrape(gw.url)
            if value(m, "modelpool_requests_total", **key):
                break
            time.sleep(0.05)
        assert value(m, "modelpool_requests_total", **key) == 1
        assert value(m, "modelpool_in_flight", route="alpha/m1") == 0


def test_metrics_need_a_token_unless_opened_and_can_be_disabled(fleet: FleetThread) -> None:
    cfg = base_config(fleet)
    cfg["metrics"] = {"token": "scrape-secret"}
    with GatewayServer(cfg) as gw:
        bare = httpx.get(gw.url + "/metrics", timeout=10)
        assert bare.status_code == 401 and bare.headers["www-authenticate"] == "Bearer"
        assert httpx.get(gw.url + "/metrics", headers={"Authorization": "Bearer nope"}).status_code == 401
        assert "modelpool_build_info" in names(scrape(gw.url, "scrape-secret"))
        assert "modelpool_build_info" in names(scrape(gw.url, ADMIN_TOKEN))
        # the scrape-only token opens nothing else
        status = httpx.get(gw.url + "/admin/status", headers={"Authorization": "Bearer scrape-secret"})
        assert status.status_code == 401
    cfg["metrics"] = {"require_token": False}
    with GatewayServer(cfg) as gw:
        assert httpx.get(gw.url + "/metrics", timeout=10).status_code == 200
    cfg["metrics"] = {"enabled": False}
    with GatewayServer(cfg) as gw:
        off = httpx.get(gw.url + "/metrics", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=10)
        assert off.status_code == 404


def test_aggregator_stats_age_and_fetch_failures_are_scraped() -> None:
    model = "deepseek/deepseek-v4.1-flash-1017"
    with FleetThread(demo_fleet()) as ft:
        cfg = ft.to_config(providers=["vercel"], state={"backend": "memory"})
        cfg["server"] = {"admin_token": ADMIN_TOKEN}
        # A second Vercel account whose stats endpoint is down (nothing listens on its port).
        dead = {"id": "vercel-b", "kind": "vercel", "api_key": "k", "models": [model]}
        dead["base_url"] = f"http://127.0.0.1:{free_port()}/v1"
        cfg["providers"].append(dead)
        cfg["holidays"] = {"source": "bundled"}
        with GatewayServer(cfg) as gw:
            m: Samples = {}
            for _ in range(200):  # the stats are fetched in the background from start-up
                m = scrape(gw.url)
                age = value(m, "modelpool_aggregator_stats_age_seconds", aggregator="vercel", model=model)
                failures = value(m, "modelpool_aggregator_stats_fetch_failures_total")
                if age is not None and failures:
                    break
                time.sleep(0.05)
    assert age is not None and 0 <= age < 60
    assert failures is not None and failures >= 1
