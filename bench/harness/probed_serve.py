"""`modelpool serve` with a loop-lateness probe inside the gateway (bench/scale.py --probe, issue #29).

    python bench/harness/probed_serve.py serve --config … --port …     # what scale.py runs instead

A slow call during a reload is either the gateway's event loop blocked (a build, a collection, a flush) or
the machine (the client, the sim, other work on the same CPUs). Only a probe in the gateway's own loop
tells the two apart: a task sleeps 1 ms over and over and records how late each wake-up is, and
`gc.callbacks` records every collection. On SIGUSR1 the gateway writes both to `$PROBE_OUT` (JSON:
`lags` [[perf_counter, seconds late, the loop thread's CPU seconds meanwhile]] for wake-ups more than
1 ms late, `gcs` [[start, generation,
seconds]] for collections over 0.5 ms; `slices` [[start, seconds, where it began, where it stopped]] for
the slices of paced builds over 1 ms, harness/slices.py). `time.perf_counter` is the system's monotonic
clock, so the benchmark compares these times with its own.

Patches `Engine.start` from outside, so it measures any tree (`--gateway-src`) the same way.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent.parent))  # run as a script: `harness` importable
from harness.slices import SliceLog

LATE = 0.001  # only wake-ups later than this are kept
TICK = 0.001


class Probe:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.lags: list[tuple[float, float, float]] = []
        self.gcs: list[tuple[float, int, float]] = []
        self._gc_start = 0.0
        self.slices = SliceLog()
        self.slices.install()

    async def run(self) -> None:
        while True:
            t0, c0 = time.perf_counter(), time.thread_time()
            await asyncio.sleep(TICK)
            t1 = time.perf_counter()
            if t1 - t0 - TICK > LATE:
                # With the loop thread's CPU time over the same stretch: a late wake-up the thread spent
                # running is the loop busy (a build, a collection, the calls); one it did not run through
                # is the machine (the thread waited for a CPU).
                self.lags.append((t1, t1 - t0 - TICK, time.thread_time() - c0))

    def on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_start = time.perf_counter()
        elif (spent := time.perf_counter() - self._gc_start) > 0.0005:
            self.gcs.append((self._gc_start, info["generation"], spent))

    def dump(self) -> None:
        import orjson

        tmp = self.out.with_suffix(".tmp")
        slices = [s for s in self.slices.slices if s[1] > 0.001]
        tmp.write_bytes(orjson.dumps({"lags": self.lags, "gcs": self.gcs, "slices": slices}))
        os.replace(tmp, self.out)


def install(out: Path) -> None:
    from modelpool.engine.core import Engine

    probe = Probe(out)
    original = Engine.start

    async def start(self: Any, watch: bool = True) -> None:
        await original(self, watch)
        loop = asyncio.get_running_loop()
        self._bench_probe = loop.create_task(probe.run())  # kept: a task only the loop refers to may go
        gc.callbacks.append(probe.on_gc)
        loop.add_signal_handler(signal.SIGUSR1, probe.dump)

    Engine.start = start  # type: ignore[method-assign]


def main() -> int:
    install(Path(os.environ["PROBE_OUT"]))
    from modelpool.cli.main import run

    sys.argv[0] = "modelpool"
    run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
