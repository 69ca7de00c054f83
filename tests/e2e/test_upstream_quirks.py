"""Two habits of real servers that the sim learned from llama.cpp's llama-server (issue #25), through the
real gateway: a kept-alive connection the upstream closed without a word, and a body that ends a moment
after its terminator while the client has already hung up. Both failed calls before the fix."""

from __future__ import annotations

import time
from collections.abc import Iterator

import anthropic
import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from gateway_server import GatewayServer
from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider
from support import base_config

N = 30


@pytest.fixture
def worn() -> Iterator[FleetThread]:
    """An Anthropic-only route that drops each kept-alive connection after one reply, as llama-server
    does after a few."""
    spec = FleetSpec(
        [
            SimProvider(
                "worn",
                kind="anthropic",
                models=[SimModel("m1", output_tokens=4)],
                ttft=0.002,
                tps=5000.0,
                keepalive_replies=1,
            )
        ]
    )
    with FleetThread(spec) as ft:
        yield ft


def test_a_silently_closed_kept_alive_connection_is_sent_again_not_failed(worn: FleetThread) -> None:
    cfg = base_config(worn, retries_per_route=0, fallback=False)
    with GatewayServer(cfg) as gw:
        client = anthropic.Anthropic(base_url=gw.url, api_key="k", max_retries=0)
        errors = []
        for i in range(N):
            try:
                with client.messages.stream(
                    model="m1", max_tokens=8, messages=[{"role": "user", "content": f"hi {i}"}]
                ) as stream:
                    assert "".join(stream.text_stream)
            except anthropic.APIError as exc:
                errors.append(str(exc))
        stale = gw.call(_stale(gw))
        health = httpx.get(gw.url + "/admin/status", headers=gw.admin_headers()).json()
        scraped = httpx.get(gw.url + "/metrics", headers=gw.admin_headers()).text
    assert errors == []
    assert stale >= N - 1  # every reused connection had been closed: each call went again at once
    metrics = {s.name: s.value for f in text_string_to_metric_families(scraped) for s in f.samples}
    assert metrics["modelpool_upstream_resent_total"] == stale  # what an operator sees of it
    assert metrics["modelpool_upstream_connections_total"] == N  # each call ended on a fresh connection
    assert len(worn.calls("worn")) == N  # one answered request per call: the re-sends are not retries
    assert "network" not in str(health.get("routes"))


async def _stale(gw: GatewayServer) -> int:
    return gw.gateway.client.pool.stale  # read on the gateway's loop, where its pool lives


def test_a_client_that_hangs_up_after_the_terminator_left_a_complete_call() -> None:
    """The upstream ends its body 0.3 s after `[DONE]` / `message_stop`; the SDKs close at the terminator.
    The call is counted, with its route and tokens, never logged as cancelled."""
    lagging = SimProvider(
        "lag",
        kind="openai",
        dialects=("openai", "anthropic"),
        models=[SimModel("m1", output_tokens=4)],
        ttft=0.002,
        tps=5000.0,
        end_delay=0.3,
    )
    with FleetThread(FleetSpec([lagging])) as ft, GatewayServer(base_config(ft)) as gw:
        oai = openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
        ant = anthropic.Anthropic(base_url=gw.url, api_key="k", max_retries=0)
        for i in range(5):
            stream = oai.chat.completions.create(
                model="m1",
                stream=True,
                stream_options={"include_usage": True},
                messages=[{"role": "user", "content": f"hi {i}"}],
            )
            assert [c.usage for c in stream if c.usage]
            stream.close()
            with ant.messages.stream(
                model="m1", max_tokens=8, messages=[{"role": "user", "content": f"hi {i}"}]
            ) as s:
                assert "".join(s.text_stream)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            rows = httpx.get(gw.url + "/admin/usage?group_by=route", headers=gw.admin_headers()).json()[
                "rows"
            ]
            if sum(r["calls"] for r in rows) >= 10:
                break
            time.sleep(0.1)
    assert [(r["route"], r["calls"]) for r in rows] == [("lag/m1", 10)]
    assert rows[0]["tokens_out"] == 10 * 4


def test_a_provider_still_loading_at_start_up_is_discovered_when_ready() -> None:
    """A local server that answers `503 Loading model` for its first seconds (llama-server loading its
    weights): the gateway started beside it finds its models by itself once it is ready."""
    loading = SimProvider("slowboot", models=[SimModel("m1", output_tokens=4)], ttft=0.002, loading=1.5)
    with FleetThread(FleetSpec([loading])) as ft:
        cfg = base_config(ft)
        cfg["providers"][0].pop("models", None)  # type: ignore[index]
        with GatewayServer(cfg) as gw:
            assert httpx.get(gw.url + "/v1/models").json()["data"] == []  # asked while it was loading
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and not httpx.get(gw.url + "/v1/models").json()["data"]:
                time.sleep(0.2)
            reply = openai.OpenAI(
                base_url=gw.url + "/v1", api_key="k", max_retries=0
            ).chat.completions.create(model="m1", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content
