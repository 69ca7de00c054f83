"""Every fault kind is observable from a client, and fault selection (times / every / probability / model)."""

from __future__ import annotations

import json
import time

import httpx
import openai
import pytest
from openai import OpenAI

from modelpool.sim import Fault, FleetSpec, FleetThread, InnerProvider, SimModel, SimProvider, expected_text

USER = [{"role": "user", "content": "hello"}]


_CLIENTS: dict[tuple[str, float], OpenAI] = {}


def client(fleet: FleetThread, timeout: float = 10) -> OpenAI:
    # Reused: building an OpenAI client costs more than a call to the sim.
    key = (fleet.base_url("alpha"), timeout)
    if key not in _CLIENTS:
        _CLIENTS[key] = OpenAI(base_url=key[0], api_key="x", max_retries=0, timeout=timeout)
    return _CLIENTS[key]


def ask(fleet: FleetThread, **kwargs: object) -> str:
    r = client(fleet).chat.completions.create(model="m1", messages=USER, **kwargs)  # type: ignore[call-overload]
    return r.choices[0].message.content


def stream_text(fleet: FleetThread, timeout: float = 10) -> tuple[list[str], list]:
    """Collect content deltas; returns (texts, chunks). Raises whatever the SDK raises."""
    texts: list[str] = []
    chunks: list = []
    for chunk in client(fleet, timeout).chat.completions.create(model="m1", messages=USER, stream=True):
        chunks.append(chunk)
        if chunk.choices and chunk.choices[0].delta.content:
            texts.append(chunk.choices[0].delta.content)
    return texts, chunks


def raw_stream(fleet: FleetThread) -> str:
    body = {"model": "m1", "messages": USER, "stream": True}
    return httpx.post(fleet.base_url("alpha") + "/chat/completions", json=body, timeout=10).text


def test_quota_is_429_with_balance_message(fleet: FleetThread) -> None:
    fleet.set_faults("alpha", [Fault("quota")])
    with pytest.raises(openai.RateLimitError) as exc:
        ask(fleet)
    assert exc.value.status_code == 429
    assert "余额不足" in exc.value.message and "insufficient balance" in exc.value.message.lower()
    assert exc.value.code == "insufficient_quota"
    assert fleet.calls("alpha")[0].outcome == "quota"


def test_rate_limit_carries_retry_after(fleet: FleetThread) -> None:
    fleet.set_faults("alpha", [Fault("rate_limit", retry_after=2)])
    with pytest.raises(openai.RateLimitError) as exc:
        ask(fleet)
    assert exc.value.response.headers["retry-after"] == "2"
    assert exc.value.response.headers["retry-after-ms"] == "2000"
    assert "余额" not in exc.value.message


@pytest.mark.parametrize(
    ("fault", "error", "status"),
    [
        (Fault("auth"), openai.AuthenticationError, 401),
        (Fault("server_error"), openai.InternalServerError, 500),
        (Fault("server_error", status=503), openai.InternalServerError, 503),
        (Fault("status", status=418, message="I am a teapot"), openai.APIStatusError, 418),
        (Fault("unsupported"), openai.BadRequestError, 400),
    ],
)
def test_status_faults(fleet: FleetThread, fault: Fault, error: type, status: int) -> None:
    fleet.set_faults("alpha", [fault])
    with pytest.raises(error) as exc:
        ask(fleet)
    assert exc.value.status_code == status
    if fault.kind == "unsupported":
        assert "does not support" in exc.value.message
    if fault.message:
        assert fault.message in exc.value.message


def test_reset_is_a_connection_error(fleet: FleetThread) -> None:
    fleet.set_faults("alpha", [Fault("reset")])
    with pytest.raises(openai.APIConnectionError):
        ask(fleet)
    with pytest.raises(openai.APIConnectionError):
        stream_text(fleet)


def test_cut_stream_raises_after_n_tokens(fleet: FleetThread) -> None:
    fleet.set_faults("alpha", [Fault("cut", after_tokens=3)])
    seen: list[str] = []
    with pytest.raises((httpx.HTTPError, openai.APIError)):
        for chunk in client(fleet).chat.completions.create(model="m1", messages=USER, stream=True):
            if chunk.choices and chunk.choices[0].delta.content:
                seen.append(chunk.choices[0].delta.content)
    assert "".join(seen) == expected_text("alpha", "m1", 3)
    assert fleet.calls("alpha")[0].content_tokens == 3


def test_cut_non_stream_is_incomplete_body(fleet: FleetThread) -> None:
    fleet.set_faults("alpha", [Fault("cut")])
    with pytest.raises(openai.APIConnectionError):
        ask(fleet)


def test_stall_before_first_byte(fleet: FleetThread) -> None:
    fleet.set_faults("alpha", [Fault("stall")])  # forever
    with pytest.raises(openai.APITimeoutError):
        ask(fleet, timeout=0.3)
    fleet.set_faults("alpha", [Fault("stall", delay=0.2)])  # then a normal reply
    started = time.monotonic()
    assert ask(fleet) == expected_text("alpha", "m1", 6)
    assert time.monotonic() - started >= 0.2


def test_stall_after_headers_and_after_tokens(fleet: FleetThread) -> None:
    fleet.set_faults("alpha", [Fault("stall", headers=True)])
    chunks: list = []
    with pytest.raises((httpx.ReadTimeout, openai.APITimeoutError)):
        for chunk in client(fleet, timeout=0.4).chat.completions.create(
            model="m1", messages=USER, stream=True
        ):
            chunks.append(chunk)
    assert len(chunks) == 1 and chunks[0].choices[0].delta.role == "assistant"
    fleet.set_faults("alpha", [Fault("stall", after_tokens=2)])
    seen: list[str] = []
    with pytest.raises((httpx.ReadTimeout, openai.APITimeoutError)):
        for chunk in client(fleet, timeout=0.4).chat.completions.create(
            model="m1", messages=USER, stream=True
        ):
            seen += [chunk.choices[0].delta.content] if chunk.choices[0].delta.content else []
    assert "".join(seen) == expected_text("alpha", "m1", 2)


def test_finite_stall_mid_stream_then_completes(fleet: FleetThread) -> None:
    fleet.set_faults("alpha", [Fault("stall", after_tokens=2, delay=0.2)])
    texts, _ = stream_text(fleet)
    assert "".join(texts) == expected_text("alpha", "m1", 6)


def test_malformed_chunk(fleet: FleetThread) -> None:
    fleet.set_faults("alpha", [Fault("malformed", after_tokens=2)])
    with pytest.raises(json.JSONDecodeError):
        stream_text(fleet)
    raw = raw_stream(fleet)
    bad = [line for line in raw.split("\n") if line.startswith("data: {") and not _is_json(line[6:])]
    assert len(bad) == 1 and raw.endswith("data: [DONE]\n\n")


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def test_no_terminator(fleet: FleetThread) -> None:
    fleet.set_faults("alpha", [Fault("no_terminator")])
    raw = raw_stream(fleet)
    assert '"finish_reason":"stop"' in raw and "[DONE]" not in raw
    texts, _ = stream_text(fleet)  # the SDK does not notice; a gateway must
    assert "".join(texts) == expected_text("alpha", "m1", 6)


def test_error_event_raises_api_error(fleet: FleetThread) -> None:
    fleet.set_faults("alpha", [Fault("error_event", after_tokens=1, message="upstream exploded")])
    with pytest.raises(openai.APIError, match="upstream exploded"):
        stream_text(fleet)
    raw = raw_stream(fleet)
    assert '"error"' in raw and "[DONE]" not in raw


def test_times_applies_to_the_next_n_calls(fleet: FleetThread) -> None:
    fleet.set_faults("alpha", [Fault("server_error", times=2)])
    outcomes = [_outcome(fleet) for _ in range(4)]
    assert outcomes == ["err", "err", "ok", "ok"]


def test_every_kth_call(fleet: FleetThread) -> None:
    fleet.set_faults("alpha", [Fault("server_error", every=3)])
    assert [_outcome(fleet) for _ in range(7)] == ["ok", "ok", "err", "ok", "ok", "err", "ok"]


def test_fault_targets_a_model(fleet: FleetThread) -> None:
    fleet.set_faults("alpha", [Fault("quota", model="reasoner")])
    assert _outcome(fleet) == "ok"
    with pytest.raises(openai.RateLimitError):
        client(fleet).chat.completions.create(model="reasoner", messages=USER)


def test_first_matching_fault_wins(fleet: FleetThread) -> None:
    fleet.set_faults("alpha", [Fault("auth", times=1), Fault("server_error", times=1)])
    with pytest.raises(openai.AuthenticationError):
        ask(fleet)
    with pytest.raises(openai.InternalServerError):
        ask(fleet)
    assert _outcome(fleet) == "ok"


def test_probability_is_seeded_and_reproducible() -> None:
    def pattern() -> list[str]:
        spec = FleetSpec(
            [SimProvider("alpha", models=[SimModel("m1")], faults=[Fault("server_error", probability=0.5)])],
            seed=11,
            fast=True,
        )
        with FleetThread(spec) as ft:
            return [_outcome(ft) for _ in range(24)]

    first = pattern()
    assert first == pattern()
    assert "ok" in first and "err" in first


def _outcome(fleet: FleetThread) -> str:
    try:
        ask(fleet)
    except openai.APIStatusError:
        return "err"
    return "ok"


def test_delay_before_an_error(fleet: FleetThread) -> None:
    fleet.set_faults("alpha", [Fault("server_error", delay=0.15)])
    started = time.monotonic()
    assert _outcome(fleet) == "err"
    assert time.monotonic() - started >= 0.15


def test_control_endpoints(fleet: FleetThread) -> None:
    root = fleet.root_url("alpha")
    r = httpx.post(root + "/_sim/faults", json=[{"kind": "quota", "times": 1}])
    assert r.status_code == 200
    assert httpx.get(root + "/_sim/faults").json() == {"faults": [{"kind": "quota", "times": 1}]}
    assert _outcome(fleet) == "err" and _outcome(fleet) == "ok"
    calls = httpx.get(root + "/_sim/calls").json()["calls"]
    assert [c["outcome"] for c in calls] == ["quota", "ok"]
    assert calls[0]["fault"] == {"kind": "quota", "times": 1}
    assert httpx.get(root + "/_sim/calls", params={"since": 1}).json()["calls"][0]["outcome"] == "ok"
    assert httpx.delete(root + "/_sim/calls").status_code == 200 and fleet.calls("alpha") == []
    bad = httpx.post(root + "/_sim/faults", json=[{"kind": "meteor"}])
    assert bad.status_code == 400
    info = httpx.get(root + "/_sim/info").json()
    assert info["id"] == "alpha" and "m1" in info["models"]


def test_fault_validation() -> None:
    with pytest.raises(ValueError):
        Fault("meteor")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Fault.from_dict({"kind": "quota", "bogus": 1})
    assert Fault.from_dict(Fault("cut", after_tokens=3).to_dict()) == Fault("cut", after_tokens=3)


# ---- benchmark shapes: heavy-tailed time to first byte, speeds on a schedule ---------------------------


def test_ttft_tail_stalls_the_drawn_share() -> None:
    from modelpool.sim import TtftTail

    spec = FleetSpec(
        [
            SimProvider(
                "tail",
                models=[SimModel("all", ttft_tail=TtftTail(1.0, 0.05)), SimModel("none")],
                ttft_tail=TtftTail(0.0, 5.0),  # the provider's default: never
                ttft=0.0,
                tps=5000.0,
            )
        ]
    )
    with FleetThread(spec) as ft:
        c = OpenAI(base_url=ft.base_url("tail"), api_key="x", max_retries=0, timeout=10)
        for model in ("all", "none"):
            reply = c.chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}])
            assert reply.choices[0].message.content == expected_text("tail", model, 24)
        assert [c.tail_stall for c in ft.calls("tail")] == [0.05, 0.0]


def test_speed_schedule() -> None:
    from modelpool.sim.spec import scheduled_tps

    schedule = [(10.0, 50.0), (0.0, 300.0), (20.0, 0.0)]
    assert scheduled_tps(schedule, 5.0, 100.0) == 300.0
    assert scheduled_tps(schedule, 15.0, 100.0) == 50.0
    assert scheduled_tps(schedule, 25.0, 100.0) == 0.0
    assert scheduled_tps([(60.0, 5.0)], 1.0, 100.0) == 100.0  # before the first entry: the configured speed
    assert scheduled_tps(None, 1.0, None) is None


def test_inner_schedule_drives_published_stats() -> None:
    inner = [InnerProvider("drifting", tps=400, ttft_ms=1, schedule=[(0.0, 77.0), (3600.0, 5.0)])]
    spec = FleetSpec([SimProvider("gw", kind="vercel", models=[SimModel("m")], inner=inner, tps=5000.0)])
    with FleetThread(spec) as ft:
        stats = httpx.get(ft.base_url("gw") + "/models/m/endpoints").json()["data"]["endpoints"][0]
        assert stats["throughput_last_1h"]["p50"] == 77.0
        c = OpenAI(base_url=ft.base_url("gw"), api_key="x", max_retries=0, timeout=10)
        reply = c.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].message.content == expected_text("gw", "m", 24)
