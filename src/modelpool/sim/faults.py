"""Which scripted fault (if any) hits a call: `times`, `every`, `probability` with a seeded RNG."""

from __future__ import annotations

import random
from dataclasses import dataclass

from modelpool.sim.spec import Fault


@dataclass(slots=True)
class _Entry:
    fault: Fault
    seen: int = 0  # matching calls so far (drives `every`)
    applied: int = 0  # times the fault actually fired (drives `times`)


class FaultBook:
    """The faults of one provider with their counters. Replaced wholesale by `set_faults`."""

    def __init__(self, faults: list[Fault], rng: random.Random) -> None:
        self._entries = [_Entry(f) for f in faults]
        self._rng = rng

    @property
    def faults(self) -> list[Fault]:
        return [e.fault for e in self._entries]

    def select(self, model_id: str, inner: str | None = None) -> Fault | None:
        """The first fault that fires for this call. `inner` scopes aggregator faults to one inner
        provider: provider-level faults (no `inner`) are drawn with `inner=None`, once per call."""
        for entry in self._entries:
            fault = entry.fault
            if fault.inner != inner or (fault.model is not None and fault.model != model_id):
                continue
            entry.seen += 1
            if fault.times is not None and entry.applied >= fault.times:
                continue
            if fault.every is not None and entry.seen % fault.every:
                continue
            if fault.probability is not None and self._rng.random() >= fault.probability:
                continue
            entry.applied += 1
            return fault
        return None
