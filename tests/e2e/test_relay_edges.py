"""Client disconnect, discovery and stream-shape edges through the real server."""

from __future__ import annotations

import time

import httpx

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import Fault, FleetSpec, FleetThread, SimModel, SimProvider
from support import base_config

MESSAGES = [{"role": "user", "content": "hello"}]


def test_client_disconnect_closes_the_upstream_at_once() -> None:
    spec = FleetSpec([SimProvider("slow", models=[SimModel("m1", output_tokens=400)], ttft=0.01, tps=20.0)])
    with FleetThread(spec) as ft, GatewayServer(base_config(ft)) as gw:
        body = {"model": "m1", "messages": MESSAGES, "stream": True}
        with httpx.stream("POST", gw.url + "/v1/chat/completions", json=body, timeout=10) as resp:
            for line in resp.iter_lines():
                if '"content"' in line and "tok0" in line:
                    break  # the client got its first token and walks away
        deadline = time.monotonic() + 5
        while ft.calls("slow")[-1].outcome != "disconnected":
            assert time.monotonic() < deadline, "upstream kept streaming after the client left"
            time.sleep(0.05)
        # 400 tokens at 20 tok/s would take 20 s: the upstream sent only a few before the close (at least
        # the one the client read: the sim counts frames as they are written, not only whole replies)
        assert 0 < ft.calls("slow")[-1].content_tokens < 40


def test_models_are_discovered_and_non_chat_models_filtered() -> None:
    spec = FleetSpec(
        [
            SimProvider(
                "acme",
                models=[
                    SimModel("chat-1", output_tokens=3, declared_type=None),
                    SimModel("text-embedding-3-large", declared_type="embedding"),  # the declared type wins
                    SimModel("Z-Image-Turbo", declared_type=None),  # filtered by name
                    SimModel("Qwen3-VL-8B-Instruct", output_tokens=3, declared_type=None),
                ],
            )
        ]
    )
    with FleetThread(spec) as ft:
        cfg = base_config(ft)
        for p in cfg["providers"]:  # type: ignore[union-attr]
            p.pop("models")  # discover from the provider's model list
            p.pop("model_info", None)
        with GatewayServer(cfg) as gw:
            ids = {m["id"] for m in httpx.get(gw.url + "/v1/models", timeout=5).json()["data"]}
    assert ids == {"chat-1", "qwen3-vl-8b-instruct"}


def test_stall_before_first_event_switches_routes(fleet: FleetThread) -> None:
    fleet.set_faults("alpha", [Fault("stall", headers=True, delay=30)])
    cfg = base_config(fleet, retries_per_route=0)
    cfg["timeouts"] = {"first_byte": "500ms"}
    with GatewayServer(cfg) as gw:
        resp = httpx.post(
            gw.url + "/v1/chat/completions",
            json={"model": "m1", "messages": MESSAGES, "stream": True},
            timeout=10,
        )
        assert resp.headers["x-modelpool-route"] == "beta/m1"
        status = httpx.get(
            gw.url + "/admin/status", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=5
        ).json()
        alpha = next(r for r in status["ranking"] if r["route"] == "alpha/m1")
        assert alpha["last_error_kind"] == "network" and alpha["mark"] == "COOLDOWN"


def test_missing_done_before_content_switches_and_after_content_errors(fleet: FleetThread) -> None:
    fleet.set_faults("alpha", [Fault("no_terminator", times=1)])
    with GatewayServer(base_config(fleet, retries_per_route=0)) as gw:
        resp = httpx.post(
            gw.url + "/v1/chat/completions",
            json={"model": "m1", "messages": MESSAGES, "stream": True},
            timeout=10,
        )
    # the answer was complete but unterminated: after content, so the client gets an error event, no [DONE]
    assert resp.headers["x-modelpool-route"] == "alpha/m1"
    assert '"error"' in resp.text.rsplit("data:", 1)[-1]
    assert "data: [DONE]" not in resp.text
