"""Gateway core through the real server with the official `openai` SDK as client (issue: gateway core)."""

from __future__ import annotations

import httpx
import openai
import pytest

from gateway_server import GatewayServer
from modelpool.sim import Fault, FleetThread, expected_text
from support import base_config

MESSAGES = [{"role": "user", "content": "hello"}]


def client(gw: GatewayServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.url + "/v1", api_key="unused", max_retries=0)


def stream_text(stream: openai.Stream) -> tuple[str, object]:
    text, last = [], None
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            text.append(chunk.choices[0].delta.content)
        last = chunk
    return "".join(text), last


def test_pool_of_two_routes_answers_non_streamed(fleet: FleetThread) -> None:
    with GatewayServer(base_config(fleet)) as gw:
        raw = client(gw).chat.completions.with_raw_response.create(model="m1", messages=MESSAGES)
        assert raw.headers["x-modelpool-route"] == "alpha/m1"
        assert raw.headers["x-modelpool-pool"] == "m1"
        assert raw.headers["x-modelpool-attempts"] == "1"
        reply = raw.parse()
        assert reply.choices[0].message.content == expected_text("alpha", "m1", 6)
        assert reply.usage is not None and reply.usage.completion_tokens == 6
        # the upstream was asked for the route's own model id
        assert fleet.calls("alpha")[-1].body["model"] == "m1"


def test_pool_of_two_routes_answers_streamed_with_usage_and_metadata(fleet: FleetThread) -> None:
    with GatewayServer(base_config(fleet, provider_order=["beta"])) as gw:
        raw = client(gw).chat.completions.with_raw_response.create(
            model="m1", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
        )
        assert raw.headers["x-modelpool-route"] == "beta/m1"
        assert raw.headers["content-type"].startswith("text/event-stream")
        text, last = stream_text(raw.parse())
        assert text == expected_text("beta", "m1", 6)
        assert last.usage is not None and last.usage.completion_tokens == 6  # usage chunk preserved
        assert last.model_extra["modelpool"] == {
            "route": "beta/m1",
            "attempts": 1,
            "switched_from": None,
            "effort": None,
        }


def test_stream_bytes_are_relayed_unchanged_until_the_final_chunk(fleet: FleetThread) -> None:
    with GatewayServer(base_config(fleet)) as gw:
        body = {"model": "m1", "messages": MESSAGES, "stream": True}
        via = httpx.post(gw.url + "/v1/chat/completions", json=body, timeout=10).content
        direct = httpx.post(fleet.base_url("alpha") + "/chat/completions", json=body, timeout=10).content
    via_events, direct_events = via.split(b"\n\n"), direct.split(b"\n\n")
    assert len(via_events) == len(direct_events)
    # content chunks are byte-identical except the per-call id/created; compare after dropping them
    import orjson

    for a, b in zip(via_events[:-3], direct_events[:-3], strict=True):
        oa, ob = orjson.loads(a[6:]), orjson.loads(b[6:])
        oa.pop("id"), ob.pop("id"), oa.pop("created"), ob.pop("created")
        assert oa == ob
    assert via.endswith(b"data: [DONE]\n\n")
    assert b'"modelpool"' in via_events[-3]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    "fault",
    [Fault("server_error", times=3, status=500), Fault("reset", times=3)],
    ids=["500", "reset-before-headers"],
)
def test_failure_before_content_is_answered_by_the_second_route(
    fleet: FleetThread, fault: Fault, stream: bool
) -> None:
    fleet.set_faults("alpha", [fault])
    with GatewayServer(base_config(fleet, retries_per_route=2)) as gw:
        raw = client(gw).chat.completions.with_raw_response.create(
            model="m1", messages=MESSAGES, stream=stream
        )
        assert raw.headers["x-modelpool-route"] == "beta/m1"
        assert raw.headers["x-modelpool-attempts"] == "4"  # 1 try + 2 retries on alpha, then beta
        assert raw.headers["x-modelpool-switched"].startswith("alpha/m1 → beta/m1")
        if stream:
            text, last = stream_text(raw.parse())
            assert last.model_extra["modelpool"]["switched_from"] == "alpha/m1"
        else:
            text = raw.parse().choices[0].message.content
        assert text == expected_text("beta", "m1", 6)  # no duplicated or spliced text
    assert len(fleet.calls("alpha")) == 3


def test_a_retry_on_the_same_route_serves_a_single_500(fleet: FleetThread) -> None:
    fleet.set_faults("alpha", [Fault("server_error", times=1)])
    with GatewayServer(base_config(fleet)) as gw:
        raw = client(gw).chat.completions.with_raw_response.create(model="m1", messages=MESSAGES)
        assert raw.headers["x-modelpool-route"] == "alpha/m1"
        assert raw.headers["x-modelpool-attempts"] == "2"
        assert "x-modelpool-switched" not in raw.headers


def test_stream_cut_after_content_raises_in_the_sdk_and_never_repeats_text(fleet: FleetThread) -> None:
    fleet.set_faults("alpha", [Fault("cut", times=1, after_tokens=3)])
    with GatewayServer(base_config(fleet)) as gw:
        seen: list[str] = []
        with pytest.raises(openai.APIError):
            for chunk in client(gw).chat.completions.create(model="m1", messages=MESSAGES, stream=True):
                if chunk.choices and chunk.choices[0].delta.content:
                    seen.append(chunk.choices[0].delta.content)
        assert "".join(seen) == expected_text("alpha", "m1", 3)
        assert len(fleet.calls("beta")) == 0  # after the commit point nothing switches
        raw = httpx.post(
            gw.url + "/v1/chat/completions",
            json={"model": "m1", "messages": MESSAGES, "stream": True},
            timeout=10,
        )
        assert raw.text.endswith("data: [DONE]\n\n")  # the next call is whole again
        assert raw.headers["x-modelpool-route"] == "beta/m1"  # the cut route rests


def test_all_routes_down_names_every_route_and_kind(fleet: FleetThread) -> None:
    fleet.set_faults("alpha", [Fault("quota")])
    fleet.set_faults("beta", [Fault("auth")])
    with (
        GatewayServer(base_config(fleet, retries_per_route=0)) as gw,
        pytest.raises(openai.APIStatusError) as info,
    ):
        client(gw).chat.completions.create(model="m1", messages=MESSAGES)
    err = info.value
    assert err.status_code == 502
    message = err.body["message"]
    assert "alpha/m1: quota" in message and "beta/m1: auth" in message
    assert [a["kind"] for a in err.body["attempts"]] == ["quota", "auth"]


def test_client_errors_use_the_openai_error_shape(fleet: FleetThread) -> None:
    with GatewayServer(base_config(fleet)) as gw:
        with pytest.raises(openai.NotFoundError) as info:
            client(gw).chat.completions.create(model="m2", messages=MESSAGES)
        assert "m1" in info.value.body["message"]  # the closest pool is suggested
        bad = httpx.post(gw.url + "/v1/chat/completions", content=b"{not json", timeout=10)
        assert bad.status_code == 400 and bad.json()["error"]["type"] == "invalid_request_error"
        missing = httpx.post(gw.url + "/v1/chat/completions", json={"model": "m1"}, timeout=10)
        assert missing.status_code == 400 and missing.json()["error"]["param"] == "messages"
        huge = httpx.post(gw.url + "/v1/chat/completions", content=b"x" * (33 * 1024 * 1024), timeout=30)
        assert huge.status_code == 413 and "max_body" in huge.json()["error"]["message"]


def test_forced_route_header_serves_that_route_only(fleet: FleetThread) -> None:
    fleet.set_faults("beta", [Fault("server_error")])
    with GatewayServer(base_config(fleet, retries_per_route=0)) as gw:
        c = client(gw)
        raw = c.chat.completions.with_raw_response.create(
            model="m1", messages=MESSAGES, extra_headers={"x-modelpool-route": "alpha/m1"}
        )
        assert raw.headers["x-modelpool-route"] == "alpha/m1"
        with pytest.raises(openai.APIStatusError):
            c.chat.completions.create(
                model="m1", messages=MESSAGES, extra_headers={"x-modelpool-route": "beta/m1"}
            )
    assert len(fleet.calls("beta")) == 1  # forced: no failover to alpha, no retries


def test_models_list_shows_pools_with_routes_and_capabilities(fleet: FleetThread) -> None:
    with GatewayServer(base_config(fleet)) as gw:
        models = client(gw).models.list()
        (pool,) = models.data
        assert pool.id == "m1"
        assert pool.model_extra["routes"] == ["alpha/m1", "beta/m1"]
        assert pool.model_extra["input_modalities"] == ["text"]
        assert pool.model_extra["tools"] is True


def test_admin_api_needs_the_token(fleet: FleetThread) -> None:
    with GatewayServer(base_config(fleet)) as gw:
        assert httpx.get(gw.url + "/admin/status", timeout=5).status_code == 401
        assert (
            httpx.get(
                gw.url + "/admin/status", headers={"Authorization": "Bearer wrong"}, timeout=5
            ).status_code
            == 401
        )
        ok = httpx.get(gw.url + "/admin/status", headers=gw.admin_headers(), timeout=5)
        assert ok.status_code == 200 and ok.json()["pools"] == {"m1": ["alpha/m1", "beta/m1"]}
        assert httpx.get(gw.url + "/healthz", timeout=5).text == "ok"
        assert httpx.get(gw.url + "/readyz", timeout=5).json()["ready"] is True


def test_client_keys_are_enforced_when_set(fleet: FleetThread) -> None:
    cfg = base_config(fleet)
    cfg["server"] = {"admin_token": "t", "api_keys": ["sk-client-1"]}
    with GatewayServer(cfg) as gw:
        with pytest.raises(openai.AuthenticationError):
            client(gw).chat.completions.create(model="m1", messages=MESSAGES)
        ok = openai.OpenAI(base_url=gw.url + "/v1", api_key="sk-client-1", max_retries=0)
        assert ok.chat.completions.create(model="m1", messages=MESSAGES).choices[0].message.content
