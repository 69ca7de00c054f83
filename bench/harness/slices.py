"""Timing the slices of a paced build (offloop.py: a greenlet switched out at `pace()`), for the bench's
probes (reload_lag.py, harness/probed_serve.py). Patched in from outside: a tree without paced builds is
left alone."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any


class SliceLog:
    """Times every slice of a paced build (offloop.py's greenlet), with where it stopped: a slice much
    longer than `SLICE` ran between the previous slice's end and its own without a `pace()`."""

    def __init__(self) -> None:
        self.slices: list[tuple[float, float, str, str]] = []  # (start, seconds, previous end, this end)

    def install(self) -> None:
        import types

        from modelpool import offloop

        real = getattr(offloop, "greenlet", None)
        if real is None:
            return  # a tree from before paced builds (A/B): nothing to time
        log = self

        class Timed(real.greenlet):  # type: ignore[misc,name-defined]
            last = ""

            def switch(self, *args: Any) -> Any:
                t0 = time.perf_counter()
                out = super().switch(*args)
                where = log.where(self.gr_frame) if not self.dead else "(done)"
                log.slices.append((t0, time.perf_counter() - t0, Timed.last, where))
                Timed.last = where
                return out

        offloop.greenlet = types.SimpleNamespace(  # type: ignore[attr-defined]
            greenlet=Timed, getcurrent=real.getcurrent, GreenletExit=real.GreenletExit
        )

    @staticmethod
    def where(frame: Any) -> str:
        import traceback

        stack = [f for f in traceback.extract_stack(frame) if not f.filename.endswith("offloop.py")]
        return " < ".join(f"{Path(f.filename).stem}:{f.name}:{f.lineno}" for f in stack[::-1][:3])
