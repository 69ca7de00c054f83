"""Redis killed mid-traffic: no request waits on it, both replicas say so, and they converge when it
returns (SPEC §9, issue #7)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gateway_server import ADMIN_TOKEN
from modelpool.sim import Fault, FleetThread
from redis_server import RedisServer
from replicas import Replica, replica_config, wait_for

Start = Callable[..., tuple[Replica, Replica]]
# Seconds of traffic before the kill (the baseline) and while Redis is down. The baseline is longer so
# its worst call already includes the scheduling hiccups of a busy machine.
BASELINE, OUTAGE = 3.0, 2.0


class Traffic:
    """Sequential calls on one replica in a thread, each stamped with its start time and duration."""

    def __init__(self, replica: Replica) -> None:
        self.replica = replica
        self.samples: list[tuple[float, float]] = []
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            start = time.monotonic()
            try:
                self.replica.chat(text=f"{self.replica.name} call {i}")
            except Exception as exc:
                self.errors.append(exc)
            self.samples.append((start, time.monotonic() - start))
            i += 1

    def __enter__(self) -> Traffic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def before(self, since: float, cut: float) -> list[float]:
        """Calls started after `since` that were over before `cut`."""
        return [d for start, d in self.samples if since <= start and start + d < cut]

    def after(self, cut: float, until: float) -> list[float]:
        """Calls still running at `cut` or started after it (a call the kill overtook counts here)."""
        return [d for start, d in self.samples if start + d >= cut and start < until]


def kill_mid_traffic(a: Replica, b: Replica, redis_server: RedisServer) -> tuple[float, float]:
    """Traffic on both replicas, Redis killed in the middle: the worst call before and after the kill."""
    with Traffic(a) as ta, Traffic(b) as tb:
        time.sleep(0.3)
        t0 = time.monotonic()
        time.sleep(BASELINE)
        t_kill = time.monotonic()
        redis_server.kill()
        wait_for(lambda: a.readyz()["degraded"] and b.readyz()["degraded"], what="degraded readiness")
        time.sleep(OUTAGE)
        t_end = time.monotonic()
    baseline = ta.before(t0, t_kill) + tb.before(t0, t_kill)
    outage = ta.after(t_kill, t_end) + tb.after(t_kill, t_end)
    assert not ta.errors and not tb.errors
    assert len(baseline) > 20 and len(outage) >= 4  # (a call stuck on Redis would make few)
    return max(baseline), max(outage)


def test_killing_redis_mid_traffic_delays_nothing_and_replicas_converge_after(
    replicas: Start, redis_server: RedisServer, fleet3: FleetThread
) -> None:
    a, b = replicas()
    for r in (a, b):
        r.chat()  # connections and code paths warm
        assert r.readyz()["degraded"] is False
    # The one timing assertion the issue asks for, against the same test's own baseline so a slow or busy
    # machine raises both sides: the worst call during the outage must not exceed the worst call before it
    # by more than 100 ms. A scheduling hiccup of a loaded machine can break that once; a request that
    # waits on Redis breaks it every time — so one more round (Redis back, killed again) is allowed.
    rounds = []
    for attempt in range(2):
        if attempt:
            redis_server.start()
            wait_for(lambda: not a.readyz()["degraded"] and not b.readyz()["degraded"], 20, "reconnect")
            time.sleep(1.0)  # the resync (push, reload) is done before the next baseline starts
        worst_before, worst_during = kill_mid_traffic(a, b, redis_server)
        rounds.append((round(worst_before, 3), round(worst_during, 3)))
        if worst_during <= worst_before + 0.1:
            break
    else:
        pytest.fail(f"a call waited on the dead Redis: (worst before, worst during) per round {rounds}")

    # While Redis is down each replica routes on its own memory: a rest found on A stays on A …
    status = a.readyz()["state"]
    assert status["healthy"] is False and status["status"].startswith("degraded") and "last_error" in status
    assert a.admin("GET", "/admin/status")["state"]["healthy"] is False
    cli = [sys.executable, "-m", "modelpool.cli.main", "status", "--url", a.url, "--token", ADMIN_TOKEN]
    shown = subprocess.run(
        cli, capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "200"}
    )
    assert "degraded: serving on local state" in shown.stdout, shown.stdout + shown.stderr
    fleet3.set_faults("alpha", [Fault("quota", times=1)])
    assert a.chat(text="outage call") == "beta/m1"
    assert a.route_state("alpha/m1") == "quota" and b.route_state("alpha/m1") != "quota"
    a.admin("PATCH", "/admin/settings", {"pool.max_attempts": 3})

    # … until Redis returns (empty: it kept nothing) and the replicas push, reload and converge.
    redis_server.start()
    wait_for(lambda: not a.readyz()["degraded"] and not b.readyz()["degraded"], 20, "reconnect")
    wait_for(lambda: b.route_state("alpha/m1") == "quota", what="B learning A's outage rest")

    def max_attempts(r: Replica) -> object:
        rows = r.admin("GET", "/admin/settings")["settings"]
        return next(row["value"] for row in rows if row["key"] == "pool.max_attempts")

    wait_for(lambda: max_attempts(b) == 3, what="B learning A's outage setting")
    fleet3.reset_calls()
    assert b.chat(text="after the outage") == "beta/m1"
    assert fleet3.calls("alpha") == []
    # And the shared store is whole again: a new setting on B reaches A through it.
    b.admin("PATCH", "/admin/settings", {"pool.max_attempts": 2})
    wait_for(lambda: max_attempts(a) == 2, what="A learning B's new setting")


def test_a_replica_started_while_redis_is_down_serves_and_joins_when_it_comes_up(
    tmp_path: Path, fleet3: FleetThread
) -> None:
    server = RedisServer(tmp_path / "redis")  # not started
    cfg = replica_config(fleet3, server.url)
    a = Replica("a", cfg, tmp_path).start()
    try:
        ready = a.readyz()
        assert ready["ready"] is True and ready["degraded"] is True
        assert a.chat() == "alpha/m1"  # routing needs no state store
        a.admin("PATCH", "/admin/settings", {"pool.max_attempts": 3})
        server.start()
        wait_for(lambda: not a.readyz()["degraded"], 20, "A connecting once Redis is up")
        b = Replica("b", cfg, tmp_path).start()
        try:
            rows = b.admin("GET", "/admin/settings")["settings"]
            assert next(r["value"] for r in rows if r["key"] == "pool.max_attempts") == 3
        finally:
            b.stop()
    finally:
        a.stop()
        server.stop()
