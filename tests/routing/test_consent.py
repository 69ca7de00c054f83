"""The consent gate (SPEC §3.5) through the real server: a watcher on `/admin/events` gets the question,
answers through `/admin/questions/{id}`; *Keep* ends the call with the original error, *Switch* and
silence proceed, and nobody watching means no question at all."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import openai
import pytest
from routing_helpers import MODEL, EventWatcher, Reply, admin, ask, config, fleet_of, quick_provider, wait_for

from gateway_server import GatewayServer
from modelpool.sim import Fault, FleetThread, expected_text


@pytest.fixture
def failing_alpha(fleet: FleetThread) -> Iterator[FleetThread]:
    fleet.set_faults("alpha", [Fault("server_error")])
    yield fleet


def ask_config(ft: FleetThread) -> dict[str, Any]:
    return config(ft, retries_per_route=0, confirm_switch="ask", confirm_timeout="1s")


def pending(gw: GatewayServer) -> list[dict[str, Any]]:
    return list(admin(gw, "/admin/questions")["questions"])


def call_in_background(pool: ThreadPoolExecutor, gw: GatewayServer, **kw: Any) -> Future[Reply]:
    return pool.submit(ask, gw, **kw)


def wait_question(gw: GatewayServer) -> dict[str, Any]:
    wait_for(lambda: bool(pending(gw)), what="a consent question")
    (question,) = pending(gw)
    return question


@pytest.mark.parametrize("answer", ["keep", "取消", "no, stay"])
def test_keep_ends_the_call_with_the_original_error(failing_alpha: FleetThread, answer: str) -> None:
    with (
        GatewayServer(ask_config(failing_alpha)) as gw,
        EventWatcher(gw) as watcher,
        ThreadPoolExecutor(1) as pool,
    ):
        call = call_in_background(pool, gw, session="chat")
        question = wait_question(gw)
        assert (question["from"], question["to"], question["kind"]) == ("alpha/m1", "beta/m1", "server")
        assert question["session"] == "chat" and question["pool"] == MODEL
        closed = admin(gw, f"/admin/questions/{question['id']}", {"answer": answer})
        assert closed["outcome"] == "keep"
        with pytest.raises(openai.APIStatusError) as info:
            call.result(10)
        assert info.value.status_code == 502
        assert [(a["route"], a["kind"]) for a in info.value.body["attempts"]] == [("alpha/m1", "server")]
        assert "the switch to beta/m1 was declined" in info.value.body["message"]
        assert pending(gw) == []
        # the question reached the watcher live over SSE, and nothing switched
        wait_for(lambda: bool(watcher.of("question-closed")), what="question-closed event")
        assert [e["question"]["id"] for e in watcher.of("question")] == [question["id"]]
        assert watcher.of("switch") == []
    assert failing_alpha.calls("beta") == []


def test_switch_answer_proceeds_to_the_next_route(failing_alpha: FleetThread) -> None:
    with (
        GatewayServer(ask_config(failing_alpha)) as gw,
        EventWatcher(gw) as watcher,
        ThreadPoolExecutor(1) as pool,
    ):
        call = call_in_background(pool, gw, stream=True)
        question = wait_question(gw)
        assert admin(gw, f"/admin/questions/{question['id']}", {"answer": "switch"})["outcome"] == "switch"
        reply = call.result(10)
        assert reply.served_by == "beta/m1" and reply.text == expected_text("beta", MODEL, 6)
        wait_for(lambda: bool(watcher.of("switch")), what="switch event")
        (switch,) = watcher.of("switch")
        assert (switch["from"], switch["to"], switch["kind"]) == ("alpha/m1", "beta/m1", "server")


def test_no_answer_proceeds_after_the_timeout(failing_alpha: FleetThread) -> None:
    with (
        GatewayServer(ask_config(failing_alpha)) as gw,
        EventWatcher(gw) as watcher,
        ThreadPoolExecutor(1) as pool,
    ):
        call = call_in_background(pool, gw)
        question = wait_question(gw)
        assert question["answer"] is None
        reply = call.result(15)  # confirm_timeout is 1 s
        assert reply.route == "beta/m1" and reply.text == expected_text("beta", MODEL, 6)
        wait_for(lambda: bool(watcher.of("question-closed")), what="question-closed event")
        assert watcher.of("question-closed")[0]["question"]["outcome"] == "timeout"
        assert pending(gw) == []


def test_one_question_per_walk() -> None:
    with (
        fleet_of(
            quick_provider("alpha", faults=[Fault("server_error")]),
            quick_provider("beta", faults=[Fault("quota")]),
            quick_provider("gamma"),
        ) as ft,
        GatewayServer(ask_config(ft)) as gw,
        EventWatcher(gw) as watcher,
        ThreadPoolExecutor(1) as pool,
    ):
        call = call_in_background(pool, gw)
        question = wait_question(gw)
        admin(gw, f"/admin/questions/{question['id']}", {"answer": "switch"})
        reply = call.result(10)
        assert reply.route == "gamma/m1" and reply.attempts == 3
        wait_for(lambda: len(watcher.of("switch")) == 2, what="both switch events")
        assert len(watcher.of("question")) == 1  # beta's quota wall switched without asking again
        assert [(e["from"], e["to"]) for e in watcher.of("switch")] == [
            ("alpha/m1", "beta/m1"),
            ("beta/m1", "gamma/m1"),
        ]


def test_without_a_watcher_the_gate_is_open_and_asks_nothing(failing_alpha: FleetThread) -> None:
    with GatewayServer(ask_config(failing_alpha)) as gw:
        assert gw.gateway.events.watchers == 0
        reply = ask(gw)
        assert reply.route == "beta/m1"
        assert not [e for e in gw.gateway.events.recent() if e["type"] == "question"]
        assert admin(gw, "/admin/questions")["questions"] == []


def test_a_watcher_that_hangs_up_mid_question_lets_the_call_proceed(failing_alpha: FleetThread) -> None:
    cfg = config(failing_alpha, retries_per_route=0, confirm_switch="ask", confirm_timeout="10m")
    with GatewayServer(cfg) as gw, ThreadPoolExecutor(1) as pool:
        sdk = openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0, timeout=15)
        with EventWatcher(gw):
            call = call_in_background(pool, gw, sdk=sdk)
            question = wait_question(gw)
        # nobody is left to answer: fail-open now, not after the 10-minute timeout
        reply = call.result(30)
        assert reply.route == "beta/m1" and reply.text == expected_text("beta", MODEL, 6)
        closed = [e for e in gw.gateway.events.recent() if e["type"] == "question-closed"]
        assert [(e["question"]["id"], e["question"]["outcome"]) for e in closed] == [
            (question["id"], "unattended")
        ]
        assert pending(gw) == []
