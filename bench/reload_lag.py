"""Issue #29: how long a 10,000-route config reload holds the event loop, measured from inside the loop.

    python bench/reload_lag.py                          # 3 reloads, this tree
    python bench/reload_lag.py --reloads 5 --profile /tmp/reload.prof   # cProfile of the reloads

The gateway's engine runs in this process (the real `Engine`, the real file watcher) in front of
`modelpool sim --preset scale` (another process, as in bench/scale.py). A probe task sleeps 1 ms in a
loop and records how late each wake-up is: a late wake-up is exactly the delay a request arriving then
would see. `gc.callbacks` records every collection (generation, duration) at the same time. Each reload
rewrites the file (temp file + rename) with one model added to / removed from a provider, and waits
until the engine's runtime has the new pool count. Reported per reload: applied (write → swap), the
probe's largest lateness inside [write, swap + 0.2 s] and the same probe's p99/max over an idle
window before it; every collection longer than 1 ms in the window. When the probe is 3 ms overdue, a
thread notes where the loop's thread is (the `stall` lines: Python-level stalls only, since the note
needs the GIL).

Run with `PYTHONPATH=<tree>/src` to measure another tree (the sim and this harness import it too).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import scale
from harness import procs
from harness.slices import SliceLog
from harness.stats import percentile


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reloads", type=int, default=3)
    ap.add_argument("--idle", type=float, default=1.0, help="seconds of idle probing before each reload")
    ap.add_argument("--profile", type=Path, help="write a cProfile of the reload windows here")
    ap.add_argument(
        "--burn",
        type=int,
        default=0,
        help="busy-looping processes while measuring, to load the CPUs as bench/scale.py's client and sim do "
        "(a worker thread holding the GIL is then descheduled at times, which an idle machine never shows)",
    )
    return ap.parse_args(argv)


class Probe:
    """Sleeps `tick` seconds over and over; `lags` holds (wake-up time, lateness in s)."""

    def __init__(self, tick: float = 0.001) -> None:
        self.tick = tick
        self.lags: list[tuple[float, float]] = []
        self.stop = False
        self.last = time.perf_counter()

    async def run(self) -> None:
        self.last = time.perf_counter()
        while not self.stop:
            t0 = time.perf_counter()
            await asyncio.sleep(self.tick)
            t1 = self.last = time.perf_counter()
            self.lags.append((t1, t1 - t0 - self.tick))

    def watch(self, stalls: list[str]) -> None:
        """In a thread: when the probe is 3 ms overdue, where the loop thread is (once per stall)."""
        import threading
        import traceback

        main = threading.main_thread().ident
        reported = 0.0
        while not self.stop:
            time.sleep(0.0005)
            if time.perf_counter() - self.last > 0.003 + self.tick and reported != self.last:
                reported = self.last
                frame = sys._current_frames().get(main or 0)
                if frame is not None:
                    stack = traceback.extract_stack(frame)[-6:][::-1]
                    stalls.append(" < ".join(f"{Path(f.filename).stem}:{f.name}:{f.lineno}" for f in stack))

    def window(self, start: float, end: float) -> list[float]:
        return [lag for t, lag in self.lags if start <= t <= end]


class GcLog:
    def __init__(self) -> None:
        self.events: list[tuple[float, int, float]] = []  # (start, generation, seconds)
        self._t0 = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._t0 = time.perf_counter()
        else:
            self.events.append((self._t0, info["generation"], time.perf_counter() - self._t0))


async def run(
    args: argparse.Namespace, sim_config: dict[str, Any], workdir: Path
) -> tuple[list[dict[str, Any]], list[tuple[int, float]]]:
    from modelpool.engine.core import Engine

    config = procs.gateway_config(sim_config, "fastest")
    path = workdir / "gateway.yaml"
    scale.write_config(path, scale.render(config))
    engine = Engine.from_config(path)
    engine.settle_heap = True  # as `modelpool serve` does
    await engine.start(watch=True)
    probe, gclog, slices = Probe(), GcLog(), SliceLog()
    slices.install()
    gc.callbacks.append(gclog)
    task = asyncio.create_task(probe.run())
    stalls: list[str] = []
    import threading

    threading.Thread(target=probe.watch, args=(stalls,), daemon=True).start()
    profiler = cProfile.Profile() if args.profile else None
    out = []
    try:
        for i in range(args.reloads):
            add = i % 2 == 0
            expect = len(engine.runtime.catalog.pools) + (1 if add else -1)
            text = scale.render(scale.with_added(config, add))
            await asyncio.sleep(0.05)  # the probe's wake-up late by the render above is not idle lag
            t_idle = time.perf_counter()
            await asyncio.sleep(args.idle)
            if profiler:
                profiler.enable()
            t_write = time.perf_counter()
            scale.write_config(path, text)
            while len(engine.runtime.catalog.pools) != expect:
                await asyncio.sleep(0.001)
            t_swap = time.perf_counter()
            await asyncio.sleep(0.2)
            if profiler:
                profiler.disable()
            during = probe.window(t_write, t_swap + 0.2)
            idle = probe.window(t_idle, t_write)
            gcs = [(g, d) for s, g, d in gclog.events if t_write <= s <= t_swap + 0.2 and d > 0.001]
            mine = sorted((s for s in slices.slices if t_write <= s[0] <= t_swap), key=lambda s: -s[1])
            out.append(
                {
                    "change": f"{'add' if add else 'remove'} {scale.ADDED}",
                    "applied_s": t_swap - t_write,
                    "lag_max_ms": max(during) * 1000,
                    "lag_p99_ms": percentile(sorted(during), 99) * 1000,
                    "idle_p99_ms": percentile(sorted(idle), 99) * 1000,
                    "idle_max_ms": max(idle) * 1000,
                    "gc_over_1ms": [(g, round(d * 1000, 1)) for g, d in gcs],
                    "slices": len(mine),
                    "longest_slices": [f"{s[1] * 1000:.2f} ms: {s[2]} → {s[3]}" for s in mine[:4]],
                }
            )
    finally:
        probe.stop = True
        await task
        gc.callbacks.remove(gclog)
        await engine.close()
    if profiler and args.profile:
        profiler.dump_stats(args.profile)
    gc_all = [(g, round(d * 1000, 1)) for _, g, d in gclog.events if d > 0.002]
    from collections import Counter

    for where, n in Counter(stalls).most_common(8):
        print(f"stall x{n}: {where}")
    return out, gc_all


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="modelpool-reload-lag-"))
    children = procs.Children(workdir)
    os.environ.setdefault("MODELPOOL_STATE_DIR", str(workdir / "state"))
    try:
        _, sim_config = procs.start_sim(children, "scale")
        for n in range(args.burn):
            children.spawn(f"burn{n}", [sys.executable, "-c", "while True: pass"])
        rows, gc_all = asyncio.run(run(args, sim_config, workdir))
    finally:
        children.stop_all()
        shutil.rmtree(workdir, ignore_errors=True)
    import modelpool

    print(f"tree: {Path(modelpool.__file__).parent}; load average {os.getloadavg()}")
    for r in rows:
        print(
            f"{r['change']:>16}: applied {r['applied_s']:.3f} s; loop lateness during max "
            f"{r['lag_max_ms']:.1f} ms p99 {r['lag_p99_ms']:.1f}; idle before p99 {r['idle_p99_ms']:.1f} "
            f"max {r['idle_max_ms']:.1f}; gc > 1 ms {r['gc_over_1ms']}; {r['slices']} slices"
        )
        for line in r["longest_slices"]:
            print(f"    {line}")
    print(f"all collections > 2 ms in the run (generation, ms): {gc_all}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    sys.exit(main())
