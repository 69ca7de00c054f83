"""Heavy configuration work without stalling the calls in flight (issue #21).

A reload of a large catalog (10,000 routes) costs a few hundred ms of CPU: reading the YAML, the
catalog, pools, route verdicts. Done on the event loop, every call waiting on it stalls that long. It
runs in a worker thread instead (the config watcher's load, the engine's new `Runtime`), and the new
snapshot is swapped in by the caller in one assignment.

A thread alone is not enough: CPython hands the GIL over every `sys.getswitchinterval()` (5 ms), so
each time the loop thread wakes for I/O it may wait up to 5 ms for the builder to let go, several
times per call. While a build runs the interval is lowered to `SWITCH_INTERVAL`, so the loop waits
fractions of a millisecond instead; the builder pays a little more in switching, which nobody waits on.
Builds are serialised (one lock) so a slower older build can never overwrite a newer snapshot.

The garbage collector is paused while a build runs: a collection holds the GIL from start to end, and the
build's own allocations triggered several of 3–20 ms each in the worker (the loop waited for them all:
max loop lag 6–14 ms with, 4–5 ms without, on the same rebuilds). What the build left is collected
normally once it is done.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
A = TypeVar("A")

SWITCH_INTERVAL = 0.0002  # seconds; CPython's default is 0.005
_lock = threading.Lock()  # builds one at a time, across engines in one process (tests run several)
_active = 0
_saved = sys.getswitchinterval()
_gc_was_on = True


async def build_off_loop(build: Callable[[A], T], arg: A) -> T:
    """`build(arg)` in a worker thread with a short GIL switch interval; returns its result."""
    return await asyncio.to_thread(_build, build, arg)


def _build(build: Callable[[A], T], arg: A) -> T:
    with _lock:
        _enter()
        try:
            return build(arg)
        finally:
            _leave()


def _enter() -> None:
    global _active, _saved, _gc_was_on
    if _active == 0:
        _saved = sys.getswitchinterval()
        sys.setswitchinterval(min(_saved, SWITCH_INTERVAL))
        _gc_was_on = gc.isenabled()
        gc.disable()
    _active += 1


def _leave() -> None:
    global _active
    _active -= 1
    if _active == 0:
        sys.setswitchinterval(_saved)
        if _gc_was_on:
            gc.enable()


GEN0_THRESHOLD = 20_000


def settle_heap() -> None:
    """Move everything alive now (imported modules, the first runtime and its catalog) out of the
    garbage collector's reach, once start-up is done (`gc.freeze`).

    A full collection walks every tracked object: ~75,000 with a 10,000-route catalog, 50–120 ms on
    this machine, and a reload allocates enough to trigger one, in whichever thread holds the GIL, so
    the event loop stalls for it (measured with gc.callbacks, issue #21). Frozen objects are still freed
    by reference counting; only a garbage *cycle* among them would stay, and start-up leaves none of
    note. Later runtimes are not frozen (an old runtime is cyclic through its memo and must be collectable).
    Process-wide, so only a server process does it (`Engine.settle_heap`), never a library user's app.

    The youngest generation's threshold goes up from 700 to `GEN0_THRESHOLD` allocations: a call frees
    what it built by reference counting (tests/e2e/test_no_cycles.py), so the collector's passes find
    almost nothing to free, and at 700 a loaded server ran one every ~4 ms and a full one every ~0.4 s
    (9 % of its wall time, issue #29). The older generations keep their thresholds.
    """
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(GEN0_THRESHOLD, older, oldest)
