"""`offloop.build_off_loop` (issues #21, #29): heavy config work runs in a paced worker thread — it runs
only while the event loop hands it a turn, ends its turn at a `pace()` call — with the collector paused and
the GIL switch interval short, and everything is put back afterwards, whatever happens."""

from __future__ import annotations

import asyncio
import gc
import sys
import threading
import time

import pytest

from modelpool import offloop
from modelpool.offloop import SWITCH_INTERVAL, build_off_loop, pace


def test_builds_in_a_thread_with_a_short_switch_interval_then_restores_it() -> None:
    before = sys.getswitchinterval()
    seen: dict[str, object] = {}

    def build(arg: int) -> int:
        seen["interval"] = sys.getswitchinterval()
        seen["thread"] = threading.current_thread() is not threading.main_thread()
        seen["gc"] = gc.isenabled()
        return arg * 2

    assert gc.isenabled()
    assert asyncio.run(build_off_loop(build, 21)) == 42
    assert seen == {"interval": pytest.approx(min(before, SWITCH_INTERVAL)), "thread": True, "gc": False}
    assert sys.getswitchinterval() == pytest.approx(before) and gc.isenabled()


def test_a_failing_build_raises_and_still_restores_the_interval() -> None:
    before = sys.getswitchinterval()

    def build(_arg: None) -> None:
        pace()
        raise ValueError("bad config")

    with pytest.raises(ValueError, match="bad config"):
        asyncio.run(build_off_loop(build, None))
    assert sys.getswitchinterval() == pytest.approx(before) and gc.isenabled()


def test_concurrent_builds_run_one_at_a_time() -> None:
    active = 0
    most = 0
    lock = threading.Lock()

    def build(_arg: int) -> None:
        nonlocal active, most
        with lock:
            active += 1
            most = max(most, active)
        threading.Event().wait(0.02)
        with lock:
            active -= 1

    async def main() -> None:
        await asyncio.gather(*(build_off_loop(build, i) for i in range(4)))

    asyncio.run(main())
    assert most == 1


def test_the_worker_runs_only_on_the_loops_turns() -> None:
    """A paced build progresses while the loop waits (its turns), and not at all while the loop is busy:
    the two threads never compete for the CPU. A plain worker thread would progress in both."""
    progress = [0]
    stop = threading.Event()

    def build(_arg: None) -> int:
        while not stop.is_set():
            progress[0] += 1
            pace()
        return progress[0]

    async def main() -> tuple[int, int, int]:
        task = asyncio.create_task(build_off_loop(build, None))
        await asyncio.sleep(0.05)  # the loop idles: the worker gets turn after turn
        idle = progress[0]
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 0.05:  # the loop busy: no turn is handed meanwhile
            pass
        busy = progress[0] - idle
        stop.set()
        return idle, busy, await task

    idle, busy, total = asyncio.run(main())
    assert idle > 0 and total >= idle
    assert busy == 0


def test_pace_outside_a_build_does_nothing() -> None:
    t0 = time.perf_counter()
    for _ in range(1000):
        pace()
    assert time.perf_counter() - t0 < 1.0  # no turn to wait for (generous: only a hang would fail)


def test_a_cancelled_build_still_finishes_and_frees_the_lock() -> None:
    finished = threading.Event()

    def slow(_arg: None) -> None:
        deadline = time.perf_counter() + 0.1
        while time.perf_counter() < deadline:
            pace()
        finished.set()

    async def main() -> int:
        task = asyncio.create_task(build_off_loop(slow, None))
        await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return await build_off_loop(lambda x: x + 1, 1)  # the lock is free again

    assert asyncio.run(main()) == 2
    assert finished.wait(5)


class _Snapshot:
    """Stands for a build's result (tracked by the collector)."""


def test_a_settled_process_freezes_each_built_snapshot_before_the_collector_resumes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After `settle_heap` (a server process), a build's result is frozen while the collector is still
    paused, so no collection ever walks it; a failed build freezes nothing."""
    monkeypatch.setattr(offloop, "_settled", False)  # put back after the test
    gc.collect()
    try:
        offloop.settle_heap()
        frozen = gc.get_freeze_count()
        made = asyncio.run(build_off_loop(lambda n: [_Snapshot() for _ in range(n)], 100))
        assert gc.get_freeze_count() >= frozen + 100 and gc.isenabled()
        walked = {id(obj) for obj in gc.get_objects()}  # what a collection would walk
        assert not any(id(x) in walked for x in made)

        def failing(_arg: None) -> None:
            raise ValueError("bad config")

        frozen = gc.get_freeze_count()
        with pytest.raises(ValueError):
            asyncio.run(build_off_loop(failing, None))
        assert gc.get_freeze_count() == frozen and gc.isenabled()
    finally:
        gc.unfreeze()  # the test process must not keep its heap frozen for the tests after this one
