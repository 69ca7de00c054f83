"""`offloop.build_off_loop` (issues #21, #29): heavy config work runs in slices on the loop's own thread —
a greenlet that hands the loop back at its first `pace()` after a slice — with the collector paused, and
everything is put back afterwards, whatever happens."""

from __future__ import annotations

import asyncio
import gc
import threading
import time

import pytest

from modelpool import offloop
from modelpool.offloop import build_off_loop, pace


def test_builds_with_the_collector_paused_then_resumes_it() -> None:
    seen: dict[str, object] = {}

    def build(arg: int) -> int:
        seen["gc"] = gc.isenabled()
        seen["thread"] = threading.current_thread() is threading.main_thread()
        return arg * 2

    assert gc.isenabled()
    assert asyncio.run(build_off_loop(build, 21)) == 42
    assert seen == {"gc": False, "thread": True} and gc.isenabled()


def test_a_failing_build_raises_and_still_resumes_the_collector() -> None:
    def build(_arg: None) -> None:
        deadline = time.perf_counter() + 0.01
        while time.perf_counter() < deadline:
            pace()  # a few slices first
        raise ValueError("bad config")

    with pytest.raises(ValueError, match="bad config"):
        asyncio.run(build_off_loop(build, None))
    assert gc.isenabled()


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


def test_the_build_runs_only_while_the_loop_waits() -> None:
    """A paced build progresses while the loop waits, and not at all while the loop is busy: it never
    competes with the calls for the CPU. A plain worker thread would progress in both."""
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


def test_a_cancelled_build_is_abandoned_and_frees_the_lock() -> None:
    reached_the_end = threading.Event()

    def slow(_arg: None) -> None:
        deadline = time.perf_counter() + 0.5
        while time.perf_counter() < deadline:
            pace()
        reached_the_end.set()

    async def main() -> int:
        task = asyncio.create_task(build_off_loop(slow, None))
        await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return await build_off_loop(lambda x: x + 1, 1)  # the lock is free again

    assert asyncio.run(main()) == 2
    assert not reached_the_end.is_set() and gc.isenabled()


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
