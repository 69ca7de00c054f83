"""Heavy configuration work without stalling the calls in flight (issues #21, #29).

A reload of a large catalog (10,000 routes) costs ~100–250 ms of CPU: reading the YAML, the catalog,
pools, route verdicts. Done in one go, every call waiting on the event loop stalls that long. So the work
runs in slices, on the loop's own thread, between the calls' steps: the build runs in a greenlet that
hands control back to the loop at the first `pace()` call after `SLICE` (the build calls `pace()` in its
long loops: YAML nodes, config values, routes, pools, even inside libyaml's C composer, which calls back
for every node). The loop then goes round at least `ROUNDS` times, and on while it has work (up to
`MAX_WAIT`), before the build's next slice. A request waits at most one slice, plus whatever it waits on
anyway. The new snapshot is swapped in by the caller in one assignment.

Why not a worker thread (issues #21 and the first try of #29, measured with a probe in the gateway's
loop): a thread competing for the GIL stalled the loop 15–38 ms whenever the kernel descheduled it while
it held the GIL; a thread taking strict turns with the loop cost two thread wake-ups per slice, each a
chance for the busy machine's other processes to take the CPU (turns of 0.5 ms took 1–2.8 ms). A greenlet
switch is a function call. Code that is not paced (start-up's first build, tests) runs in one go: `pace()`
outside a build returns at once.

Builds are serialised (one lock) so a slower older build can never overwrite a newer snapshot. The garbage
collector is paused while a build runs: a collection runs from start to end in one go (a full one over a
10,000-route heap takes 10–40 ms), which no slice can bound. In a server process, which has settled its
heap (`settle_heap`), a successful build's result is settled too before the collector resumes: nothing the
build allocated is ever walked by a collection. Elsewhere (a library user's app) what it left is collected
normally once it is done.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import greenlet

T = TypeVar("T")
A = TypeVar("A")

SLICE = 0.0005  # seconds of build per slice: the longest a request arriving meanwhile waits for the loop
# Rounds of the loop between two slices: a call's next step is often a callback its previous one scheduled
# (a timer sets a future, the future wakes its task), each a round of its own, so one round per slice
# would cost such a call a slice per step.
ROUNDS = 8
BUSY = 0.00005  # a round longer than this ran something: let the loop go round again first
MAX_WAIT = 0.002  # ...but run a slice at least this often, so a busy gateway still reloads
_lock = threading.Lock()  # builds one at a time, across engines in one process (tests run several)
_active = 0
_gc_was_on = True
_settled = False  # settle_heap() ran: builds settle their results too
_paced: greenlet.greenlet | None = None  # the build running now, if any
_deadline = 0.0  # when its slice ends


def pace() -> None:
    """Where paced work may hand the loop back; a no-op outside a paced build."""
    if _paced is not None and time.perf_counter() >= _deadline and greenlet.getcurrent() is _paced:
        _paced.parent.switch()


async def build_off_loop(build: Callable[[A], T], arg: A) -> T:
    """`build(arg)` in slices between the loop's other work; returns its result (or raises its error)."""
    global _paced, _deadline
    await _acquire(_lock)
    _enter()
    child = greenlet.greenlet(build)
    ok = False
    try:
        _paced, _deadline = child, time.perf_counter() + SLICE
        result: T = child.switch(arg)  # runs until its first pace() after SLICE, or to its end
        while not child.dead:
            _paced = None
            await _loop_catches_up()
            _paced, _deadline = child, time.perf_counter() + SLICE
            result = child.switch()
        ok = True
        return result
    finally:
        _paced = None
        if not child.dead:  # cancelled between two slices: abandon the build (nobody takes its result)
            child.throw(greenlet.GreenletExit)
        if ok and _settled:
            gc.freeze()  # the collector still paused: the new snapshot is never walked (settle_heap)
        _leave()
        _lock.release()


async def _loop_catches_up() -> None:
    """Go round the event loop `ROUNDS` times, and on while a round runs something (until `MAX_WAIT`)."""
    start = time.perf_counter()
    rounds = 0
    while True:
        before = time.perf_counter()
        await asyncio.sleep(0)
        rounds += 1
        now = time.perf_counter()
        if now - start >= MAX_WAIT or (rounds >= ROUNDS and now - before < BUSY):
            return


async def _acquire(lock: threading.Lock) -> None:
    """The build lock without blocking the loop: another build (maybe on another loop) may hold it."""
    if lock.acquire(blocking=False):
        return
    waiting = asyncio.ensure_future(asyncio.to_thread(lock.acquire))
    try:
        await asyncio.shield(waiting)
    except asyncio.CancelledError:
        waiting.add_done_callback(lambda _: lock.release())  # taken after all: give it back
        raise


def _enter() -> None:
    global _active, _gc_was_on
    if _active == 0:
        _gc_was_on = gc.isenabled()
        gc.disable()
    _active += 1


def _leave() -> None:
    global _active
    _active -= 1
    if _active == 0 and _gc_was_on:
        gc.enable()


GEN0_THRESHOLD = 20_000


def settle_heap() -> None:
    """Move everything alive now (imported modules, the first runtime and its catalog) out of the
    garbage collector's reach, once start-up is done (`gc.freeze`), and so on after every later build.

    A full collection walks every tracked object: ~75,000 with a 10,000-route catalog, 50–120 ms on
    this machine, and a reload allocates enough to trigger one, so the event loop stalls for it (measured
    with gc.callbacks, issues #21, #29). Frozen objects are still freed by reference counting; only a
    garbage *cycle* among them would stay. Start-up leaves none of note, and a runtime holds none
    (runtime.py), so a replaced runtime is freed when its last call ends; what else happens to be alive
    at the end of a build is frozen with it (a few calls in flight, freed by reference counting as they
    end). Process-wide, so only a server process does it (`Engine.settle_heap`), never a library user's app.

    The youngest generation's threshold goes up from 700 to `GEN0_THRESHOLD` allocations: a call frees
    what it built by reference counting (tests/e2e/test_no_cycles.py), so the collector's passes find
    almost nothing to free, and at 700 a loaded server ran one every ~4 ms and a full one every ~0.4 s
    (9 % of its wall time, issue #29). The older generations keep their thresholds.
    """
    global _settled
    gc.freeze()
    _settled = True
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(GEN0_THRESHOLD, older, oldest)
