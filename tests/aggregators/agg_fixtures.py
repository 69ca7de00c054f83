"""Helpers shared by the aggregator tests (a module, not conftest, so tests can import them by name)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

FIXTURES = Path(__file__).parent / "fixtures"


def load_json(name: str) -> Any:
    return orjson.loads((FIXTURES / name).read_bytes())


def sse_data(name: str) -> list[bytes]:
    """The `data:` payloads of a saved SSE capture, in order."""
    out = []
    for line in (FIXTURES / name).read_bytes().splitlines():
        if line.startswith(b"data: "):
            out.append(line[len(b"data: ") :])
    return out


class FakeClock:
    """Time moves only when a test says so: staleness and back-off without sleeping."""

    def __init__(self, start: float = 1_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
