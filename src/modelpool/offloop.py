"""Heavy configuration work without stalling the calls in flight (issues #21, #29).

A reload of a large catalog (10,000 routes) costs ~100 ms of CPU: reading the YAML, the catalog, pools,
route verdicts. Done on the event loop in one go, every call waiting on it stalls that long. It runs in
a worker thread instead (the config watcher's load, the engine's new `Runtime`), and the new snapshot is
swapped in by the caller in one assignment.

A thread that simply competes for the GIL is not enough (issue #21 measured 15–38 ms stalls): on a busy
machine the kernel deschedules the worker while it holds the GIL, and the loop then waits for the
worker's next time slice, not for the GIL's switch interval. So the worker is *paced*: it runs only while
the loop hands it a turn, and the loop thread sleeps meanwhile. A turn ends at the first `pace()` call
after `SLICE` (the build calls `pace()` in its long loops: YAML nodes, routes, pools); the loop then
runs until it has nothing ready (or `MAX_WAIT` has passed) before handing the next turn. The two threads
never want the CPU at once, so a request waits at most one slice, plus whatever it waits on anyway.
Code that is not paced (start-up's first build, tests) finds no turn and `pace()` returns at once.

Builds are serialised (one lock) so a slower older build can never overwrite a newer snapshot. The garbage
collector is paused while a build runs: a collection holds the GIL from start to end (a full one over a
10,000-route heap takes 10–40 ms), which no turn can bound. In a server process, which has settled its heap
(`settle_heap`), a successful build's result is settled too before the collector resumes: nothing the build
allocated is ever walked by a collection. Elsewhere (a library user's app) what it left is collected
normally once it is done.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
A = TypeVar("A")

SWITCH_INTERVAL = 0.0002  # seconds; CPython's default is 0.005 (matters only once a worker runs free)
SLICE = 0.0005  # a worker's turn: the longest a request arriving meanwhile waits for the loop
# Rounds of the loop between two turns: a call's next step is often a callback its previous one scheduled
# (a timer sets a future, the future wakes its task), each a round of its own, so one round per turn would
# cost such a call a turn per step.
ROUNDS = 8
BUSY = 0.00005  # a round longer than this ran something: let the loop go round again first
MAX_WAIT = 0.002  # ...but hand the worker a turn at least this often, so a busy gateway still reloads
STUCK = 0.05  # a turn not ended by then (a long C call, a worker waiting on the loop): let it run free
_lock = threading.Lock()  # builds one at a time, across engines in one process (tests run several)
_active = 0
_saved = sys.getswitchinterval()
_gc_was_on = True
_settled = False  # settle_heap() ran: builds settle their results too
_current = threading.local()  # the worker's `_Turns` while it builds


def pace() -> None:
    """Where paced work may hand the CPU back to the event loop; a no-op outside a paced build."""
    turns: _Turns | None = getattr(_current, "turns", None)
    if turns is not None and time.perf_counter() >= turns.deadline:
        turns.hand_back()


class _Turns:
    """The baton between the loop thread and one worker: exactly one of them runs at a time."""

    def __init__(self) -> None:
        self._go = threading.Semaphore(0)  # the loop → the worker: your turn
        self._back = threading.Semaphore(0)  # the worker → the loop: turn over (or finished)
        self.deadline = 0.0
        self.free = False  # the loop stopped handing turns: run to the end unpaced
        self.finished = False

    # worker side
    def wait_turn(self) -> None:
        if not self.free:
            self._go.acquire()
        self.deadline = time.perf_counter() + SLICE

    def hand_back(self) -> None:
        self._back.release()
        self.wait_turn()

    def finish(self) -> None:
        self.finished = True
        self._back.release()

    # loop side
    def turn(self) -> bool:
        """Let the worker run one turn (the loop thread blocks meanwhile); False if it did not end in time."""
        self._go.release()
        return self._back.acquire(timeout=STUCK)

    def release(self) -> None:
        """Stop pacing: the worker runs on by itself, competing for the GIL as any thread."""
        self.free = True
        self._go.release()


async def build_off_loop(build: Callable[[A], T], arg: A) -> T:
    """`build(arg)` in a paced worker thread; returns its result (or raises its error)."""
    await _acquire(_lock)
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Any] = loop.create_future()
    turns = _Turns()
    worker = threading.Thread(
        target=_work, args=(build, arg, turns, loop, done), name="modelpool-build", daemon=True
    )
    worker.start()
    try:
        while not turns.finished:
            if not turns.turn():
                turns.release()
                break
            if not turns.finished:
                await _loop_catches_up()
        result: T = await done
        return result
    except asyncio.CancelledError:
        turns.release()  # it runs to its end unpaced and frees the lock; nobody waits for its result
        raise


def _work(
    build: Callable[[A], T], arg: A, turns: _Turns, loop: asyncio.AbstractEventLoop, done: asyncio.Future[Any]
) -> None:
    _current.turns = turns
    _enter()
    outcome: tuple[Any, BaseException | None] = (None, None)
    try:
        turns.wait_turn()
        outcome = (build(arg), None)
        if _settled:
            gc.freeze()  # the collector still paused: the new snapshot is never walked (settle_heap)
    except BaseException as exc:  # handed to the awaiting caller, which re-raises it
        outcome = (None, exc)
    finally:
        _current.turns = None
        _leave()
        _lock.release()
        turns.finish()
        try:
            loop.call_soon_threadsafe(_settle, done, outcome)
        except RuntimeError:
            pass  # the loop is closed: nobody is waiting


def _settle(done: asyncio.Future[Any], outcome: tuple[Any, BaseException | None]) -> None:
    if done.cancelled():
        return
    result, error = outcome
    if error is not None:
        done.set_exception(error)
    else:
        done.set_result(result)


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


def settle_heap() -> None:
    """Move everything alive now (imported modules, the first runtime and its catalog) out of the
    garbage collector's reach, once start-up is done (`gc.freeze`), and so on after every later build.

    A full collection walks every tracked object: ~75,000 with a 10,000-route catalog, 50–120 ms on
    this machine, and a reload allocates enough to trigger one, in whichever thread holds the GIL, so
    the event loop stalls for it (measured with gc.callbacks, issues #21, #29). Frozen objects are still
    freed by reference counting; only a garbage *cycle* among them would stay. Start-up leaves none of note,
    and a runtime holds none (runtime.py), so a replaced runtime is freed when its last call ends; what
    else happens to be alive at the end of a build is frozen with it (a few calls in flight, freed by
    reference counting as they end). Process-wide, so only a server process does it
    (`Engine.settle_heap`), never a library user's app.
    """
    global _settled
    gc.freeze()
    _settled = True
