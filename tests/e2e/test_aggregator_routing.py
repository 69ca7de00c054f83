"""fastcel through the real server: the aggregator's inner providers fastest first (issue: aggregator)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import openai
import pytest

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import FleetThread, demo_fleet

MODEL = "deepseek/deepseek-v4.1-flash-1017"


@pytest.fixture(scope="module")
def demo() -> Iterator[FleetThread]:
    with FleetThread(demo_fleet()) as ft:
        ft.set_faults("vercel", [])  # the demo's random faults are not the subject here
        yield ft


def config(ft: FleetThread) -> dict:
    cfg = ft.to_config(providers=["vercel"], state={"backend": "memory"}, server={"admin_token": ADMIN_TOKEN})
    cfg["pool"] = {"strategy": "priority"}
    return cfg


def chat(gw: GatewayServer, session: str, **extra: object) -> openai.types.chat.ChatCompletion:
    # The aggregator fingerprints a conversation by its first message (its session affinity), so each
    # session of these tests opens with its own words.
    c = openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0)
    return c.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": f"hi from {session}"}],
        extra_headers={"x-session-id": session},
        **extra,
    )


def wait_for_stats(gw: GatewayServer) -> dict:
    deadline = time.monotonic() + 10
    while True:
        report = httpx.get(f"{gw.url}/admin/ranking/{MODEL}", headers=gw.admin_headers(), timeout=15).json()
        if report["available"]:
            return report
        assert time.monotonic() < deadline, report
        time.sleep(0.05)


def test_new_conversations_start_on_the_fastest_inner_provider(demo: FleetThread) -> None:
    with GatewayServer(config(demo)) as gw:
        report = wait_for_stats(gw)
        order = report["order"]
        assert order[:3] == ["subconscious", "cerebras", "sambanova"]  # groq (394→318 tok/s) is demoted:
        assert order.index("groq") > order.index("runinfra")  # its 15-minute uptime is below min_uptime
        assert order.index("fireworks") > order.index("runinfra")  # no data: after every measured one
        demo.reset_calls("vercel")
        chat(gw, "s1")
        call = demo.calls("vercel")[-1]
        assert call.body["providerOptions"]["gateway"]["order"] == order
        assert call.inner == "subconscious"
        # the served-by line comes from the routing record read off the reply
        served = httpx.get(
            f"{gw.url}/admin/ranking/{MODEL}?session=s1", headers=gw.admin_headers(), timeout=10
        ).json()["served_by"]
        assert served["provider"] == "subconscious"


def test_tools_demote_providers_without_tool_support(demo: FleetThread) -> None:
    tools = [
        {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}
    ]
    with GatewayServer(config(demo)) as gw:
        wait_for_stats(gw)
        demo.reset_calls("vercel")
        chat(gw, "s1", tools=tools)
        order = demo.calls("vercel")[-1].body["providerOptions"]["gateway"]["order"]
        assert order[-1] == "chutes" or order.index("chutes") > order.index("friendli")


def test_an_explicit_order_passes_through_untouched(demo: FleetThread) -> None:
    with GatewayServer(config(demo)) as gw:
        wait_for_stats(gw)
        demo.reset_calls("vercel")
        own = {"providerOptions": {"gateway": {"order": ["baseten"]}}}
        chat(gw, "explicit", extra_body=own)  # a new session: the sim's affinity has no pin for it
        call = demo.calls("vercel")[-1]
        assert call.body["providerOptions"] == own["providerOptions"]
        assert call.inner == "baseten"


def test_streamed_replies_record_who_served(demo: FleetThread) -> None:
    with GatewayServer(config(demo)) as gw:
        wait_for_stats(gw)
        c = openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0)
        stream = c.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": "hi from st"}],
            stream=True,
            extra_headers={"x-session-id": "st"},
        )
        chunks = list(stream)
        assert chunks[-1].model_extra["modelpool"]["route"] == f"vercel/{MODEL}"
        served = httpx.get(
            f"{gw.url}/admin/ranking/{MODEL}?session=st", headers=gw.admin_headers(), timeout=10
        ).json()["served_by"]
        assert served["provider"] == "subconscious"
        cli = subprocess.run(
            [
                sys.executable,
                "-m",
                "modelpool.cli.main",
                "rank",
                MODEL,
                "--url",
                gw.url,
                "--token",
                ADMIN_TOKEN,
                "--json",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert json.loads(cli.stdout)["order"][0] == "subconscious"
        table = subprocess.run(
            [
                sys.executable,
                "-m",
                "modelpool.cli.main",
                "rank",
                MODEL,
                "--url",
                gw.url,
                "--token",
                ADMIN_TOKEN,
            ],
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout
        assert "subconscious" in table and "first-party" in table


@pytest.mark.parametrize("stream", [False, True], ids=["once", "stream"])
@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi from {s}"}]}),
        ("/v1/messages", {"max_tokens": 64, "messages": [{"role": "user", "content": "hi from {s}"}]}),
        ("/v1/responses", {"input": "hi from {s}"}),
    ],
    ids=["chat", "messages", "responses"],
)
def test_order_injected_and_routing_read_in_every_native_body_shape(
    demo: FleetThread, path: str, body: dict, stream: bool
) -> None:
    """The aggregator speaks all three dialects: each client's call goes natively, its own body shape gets
    `providerOptions.gateway.order` and nothing else changes (a chat stream also asks for its usage), and
    the reply's routing record is read."""
    session = f"{path.rsplit('/', 1)[-1]}-{stream}"
    sent = json.loads(json.dumps(body).replace("{s}", session))
    with GatewayServer(config(demo)) as gw:
        order = wait_for_stats(gw)["order"]
        demo.reset_calls("vercel")
        resp = httpx.post(
            gw.url + path,
            json={"model": MODEL, "stream": stream, **sent},
            headers={"x-session-id": session},
            timeout=30,
        )
        assert resp.status_code == 200, resp.text
        call = demo.calls("vercel")[-1]
        assert call.path.endswith(path.removeprefix("/v1"))  # native: the client's own endpoint
        # A chat stream also asks for the usage its client did not ask for (SPEC §14, every call counted).
        chat_stream = stream and path.endswith("/completions")
        usage = {"stream_options": {"include_usage": True}} if chat_stream else {}
        assert call.body == {
            "model": MODEL,
            "stream": stream,
            **sent,
            "providerOptions": {"gateway": {"order": order}},
            **usage,
        }
        assert call.inner == order[0]
        served = httpx.get(
            f"{gw.url}/admin/ranking/{MODEL}?session={session}", headers=gw.admin_headers(), timeout=10
        ).json()["served_by"]
        assert served["provider"] == order[0]
