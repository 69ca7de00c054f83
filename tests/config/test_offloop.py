"""`offloop.build_off_loop` (issue #21): heavy config work runs in a worker thread with a short GIL
switch interval and the garbage collector paused, and both are put back afterwards, whatever happens."""

from __future__ import annotations

import asyncio
import gc
import sys
import threading

import pytest

from modelpool.offloop import SWITCH_INTERVAL, build_off_loop


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
