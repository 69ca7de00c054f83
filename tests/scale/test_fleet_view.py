"""Two `modelpool serve` replicas on one real Redis operate as one fleet (SPEC §9, last paragraph; issue
#20): a session served by A is listed with its live route by B, B's event feed shows A's switch, a
consent question raised by a walk on A is answered through B, nobody watching anywhere fails open at
once, and a Redis restarted empty leaves calls alone and comes back to sharing."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import openai
import orjson
import pytest

from gateway_server import ADMIN_TOKEN
from modelpool.sim import Fault, FleetThread
from redis_server import RedisServer
from replicas import Replica, wait_for

Start = Callable[..., tuple[Replica, Replica]]


class Watcher:
    """A live `/admin/events` subscriber on one replica (the dashboard's role), on a plain socket so the
    test can hang up at any moment; collects the events as they stream in."""

    def __init__(self, replica: Replica, replay: int = 0) -> None:
        self.replica = replica
        self.replay = replay
        self.events: list[dict[str, Any]] = []
        self._sock: socket.socket | None = None

    def __enter__(self) -> Watcher:
        sock = socket.create_connection(("127.0.0.1", self.replica.port), timeout=10)
        sock.sendall(
            (
                f"GET /admin/events?replay={self.replay} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"Authorization: Bearer {ADMIN_TOKEN}\r\nAccept: text/event-stream\r\n\r\n"
            ).encode()
        )
        sock.settimeout(None)
        self._sock = sock
        threading.Thread(target=self._read, daemon=True).start()
        wait_for(lambda: watchers(self.replica)["here"] >= 1, what="the events subscription")
        return self

    def _read(self) -> None:
        assert self._sock is not None
        buf = b""
        while True:
            try:
                data = self._sock.recv(65536)
            except OSError:
                return
            if not data:
                return
            buf += data
            *lines, buf = buf.split(b"\n")
            for line in lines:
                if line.startswith(b"data: "):
                    self.events.append(orjson.loads(line[6:].rstrip(b"\r")))

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in list(self.events) if e["type"] == kind]

    def __exit__(self, *exc: object) -> None:
        if self._sock is not None:
            self._sock.shutdown(socket.SHUT_RDWR)
            self._sock.close()
            self._sock = None


def watchers(replica: Replica) -> dict[str, int]:
    return dict(replica.admin("GET", "/admin/status")["fleet"]["watchers"])


def sessions(replica: Replica) -> dict[str, dict[str, Any]]:
    return {s["session"]: s for s in replica.admin("GET", "/admin/sessions")["sessions"]}


def questions(replica: Replica) -> list[dict[str, Any]]:
    return list(replica.admin("GET", "/admin/questions")["questions"])


def replica_id(replica: Replica) -> str:
    return str(replica.admin("GET", "/admin/status")["fleet"]["replica"])


def test_a_session_served_by_a_is_listed_with_its_live_route_by_b(replicas: Start) -> None:
    a, b = replicas()
    assert a.chat(session="conv-on-a") == "alpha/m1"
    # The history (shared store) and the live route (change feed) reach B separately: wait for the live one.
    wait_for(
        lambda: "provider" in sessions(b).get("conv-on-a", {}), what="B listing A's session with its route"
    )
    row = sessions(b)["conv-on-a"]
    assert (row["route"], row["provider"], row["model"], row["pool"]) == ("alpha/m1", "alpha", "m1", "m1")
    assert row["replica"] == replica_id(a) != replica_id(b)
    detail = b.admin("GET", "/admin/sessions/conv-on-a")
    assert detail["live_route"]["route"] == "alpha/m1"
    assert detail["live_route"]["replica"] == replica_id(a)
    # The conversation moves to B (a load balancer): both replicas now list B's newer live route.
    b.chat(session="conv-on-a", text="turn 2")
    wait_for(lambda: sessions(a)["conv-on-a"]["replica"] == replica_id(b), what="A listing B's live route")
    assert list(sessions(b)).count("conv-on-a") == 1


def test_b_event_feed_shows_a_switch(replicas: Start, fleet3: FleetThread) -> None:
    a, b = replicas(retries_per_route=0)
    with Watcher(b) as feed:
        fleet3.set_faults("alpha", [Fault("quota", times=1)])
        assert a.chat(session="sw") == "beta/m1"
        wait_for(lambda: bool(feed.of("switch")), what="A's switch on B's feed")
    (switch,) = feed.of("switch")
    assert (switch["from"], switch["to"], switch["kind"], switch["session"]) == (
        "alpha/m1",
        "beta/m1",
        "quota",
        "sw",
    )
    assert switch["replica"] == replica_id(a)
    # A late joiner on B gets it from the replay buffer too.
    with Watcher(b, replay=100) as late:
        wait_for(lambda: bool(late.of("switch")), what="the switch in B's replay")


def _ask_replicas(replicas: Start, fleet3: FleetThread) -> tuple[Replica, Replica]:
    fleet3.set_faults("alpha", [Fault("server_error")])
    return replicas(retries_per_route=0, confirm_switch="ask", confirm_timeout="10m")


@pytest.mark.parametrize(("answer", "outcome"), [("keep", "keep"), ("switch", "switch")])
def test_a_question_raised_on_a_is_answered_through_b(
    replicas: Start, fleet3: FleetThread, answer: str, outcome: str
) -> None:
    a, b = _ask_replicas(replicas, fleet3)
    with Watcher(b) as feed, ThreadPoolExecutor(1) as pool:
        # Only B has a watcher: A counts it as someone watching.
        wait_for(lambda: watchers(a)["elsewhere"] >= 1, what="A seeing B's watcher")
        assert watchers(a)["here"] == 0
        call = pool.submit(a.chat, "asked")
        wait_for(lambda: bool(questions(b)), what="A's question listed on B")
        (question,) = questions(b)
        assert (question["from"], question["to"], question["kind"]) == ("alpha/m1", "beta/m1", "server")
        assert question["session"] == "asked"
        assert feed.of("question")  # the dashboard card's event reached B's watcher
        reply = b.admin("POST", f"/admin/questions/{question['id']}", {"answer": answer})
        assert reply["outcome"] == outcome
        if outcome == "switch":
            assert call.result(30) == "beta/m1"
        else:
            with pytest.raises(openai.APIStatusError) as info:
                call.result(30)
            assert info.value.status_code == 502
            assert "the switch to beta/m1 was declined" in info.value.body["message"]
        wait_for(lambda: bool(feed.of("question-closed")), what="the question closed on B's feed")
        assert feed.of("question-closed")[0]["question"]["outcome"] == outcome
        wait_for(lambda: not questions(b), what="the question leaving B's list")
    assert not questions(a)


def test_no_watcher_anywhere_fails_open_at_once(replicas: Start, fleet3: FleetThread) -> None:
    a, b = _ask_replicas(replicas, fleet3)
    # B had a watcher, which hung up: it no longer counts on A.
    with Watcher(b):
        wait_for(lambda: watchers(a)["elsewhere"] >= 1, what="A seeing B's watcher")
    wait_for(lambda: watchers(a)["elsewhere"] == 0, what="A seeing B's watcher leave")
    # With a 10-minute confirm_timeout, a question would hold this call far past the client's timeout.
    assert a.chat(session="unwatched") == "beta/m1"
    assert not questions(a) and not questions(b)


def test_redis_restarted_empty_leaves_calls_alone_and_sharing_comes_back(
    replicas: Start, redis_server: RedisServer
) -> None:
    a, b = replicas()
    a.chat(session="before")
    wait_for(lambda: "before" in sessions(b), what="sharing before the outage")
    redis_server.kill()
    wait_for(lambda: not b.readyz()["state"]["healthy"], what="B noticing the outage")
    # Calls are unaffected, on both replicas; the view is per process meanwhile.
    assert a.chat(session="during-a") == "alpha/m1"
    assert b.chat(session="during-b") == "alpha/m1"
    assert "during-a" in sessions(a) and "during-a" not in sessions(b)
    redis_server.start()  # empty: no persistence
    wait_for(lambda: a.readyz()["state"]["healthy"] and b.readyz()["state"]["healthy"], what="reconnect")
    # What each replica served during the outage is shared again, and new calls share as before.
    wait_for(lambda: "during-a" in sessions(b), timeout=20, what="B listing A's outage session")
    wait_for(lambda: "during-b" in sessions(a), timeout=20, what="A listing B's outage session")
    a.chat(session="after")
    wait_for(lambda: "after" in sessions(b), what="sharing after the restart")
