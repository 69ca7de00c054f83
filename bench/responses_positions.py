"""CPU per event of the native Responses relay on a stream that carries its positions (`sequence_number`,
`output_index`, `content_index`) and on one that leaves them out (llama.cpp's server), which the relay
completes by parsing and re-encoding each event.

The relay's own loop (`ResponsesStream._relay`) runs in-process on recorded sim streams, one event per
upstream read (what a model at its own pace sends) and all in one read (a burst), with the network, the
client and the walk stubbed out: the figure is the relay's work per event, nothing else.

    python bench/responses_positions.py [--tokens 200] [--calls 300] [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import urllib.request
from types import SimpleNamespace
from typing import Any

import orjson

from modelpool.config.limits import TimeoutsConfig
from modelpool.protocols.sse import SSEParser
from modelpool.relays.client_stream import ClientStream
from modelpool.relays.responses import ResponsesStream
from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider


def recorded(tokens: int) -> dict[str, bytes]:
    """One streamed reply of `tokens` answer tokens from a sim that sends positions and from one that
    does not (the same reply otherwise)."""
    model = SimModel("m", output_tokens=tokens)
    fast = {"dialects": ("openai", "responses"), "models": [model], "ttft": 0.0, "tps": 1e9}
    spec = FleetSpec(
        [
            SimProvider("full", **fast),
            SimProvider("bare", responses_positions=False, **fast),
        ]
    )
    out = {}
    with FleetThread(spec) as ft:
        for pid in ("full", "bare"):
            body = orjson.dumps({"model": "m", "input": "hi", "stream": True})
            req = urllib.request.Request(
                ft.base_url(pid) + "/responses", data=body, headers={"content-type": "application/json"}
            )
            with urllib.request.urlopen(req) as resp:
                out[pid] = resp.read()
    return out


class _Reader:
    """The upstream body, one prepared read at a time."""

    def __init__(self, reads: list[bytes]) -> None:
        self.reads = reads
        self.at = 0

    async def readany(self) -> bytes:
        if self.at == len(self.reads):
            return b""
        self.at += 1
        return self.reads[self.at - 1]


class _State:
    effort = None

    def headers(self) -> list[tuple[bytes, bytes]]:
        return []

    def add_usage(self, route: Any, usage: Any) -> None:
        return None

    def metadata(self) -> dict[str, Any]:
        return {"route": "bench/m"}


async def _nothing(*_: Any) -> None:
    return None


async def one_call(reads: list[bytes]) -> int:
    """Relay one reply; the number of bytes the client got."""
    got = 0

    async def emit(data: bytes) -> None:
        nonlocal got
        got += len(data)

    call: Any = SimpleNamespace(signed=None)
    client: Any = SimpleNamespace(timeouts=TimeoutsConfig())
    relay = ResponsesStream(call, client, _State(), ClientStream(), _nothing, emit)
    relay.route_key = "bench/m"
    await relay._relay(SimpleNamespace(content=_Reader(reads)), time.monotonic())
    return got


def per_event_us(reads: list[bytes], events: int, calls: int) -> float:
    async def run() -> float:
        t0 = time.process_time()
        for _ in range(calls):
            await one_call(reads)
        return time.process_time() - t0

    return asyncio.run(run()) / (calls * events) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=200)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    streams = recorded(args.tokens)
    print(f"{args.tokens} answer tokens, {args.calls} calls per run, median of {args.repeat} runs")
    print("| upstream events | reads | events | µs CPU per event | client bytes ÷ upstream bytes |")
    print("|---|---|---|---|---|")
    for name, raw in streams.items():
        events = [e.raw for e in SSEParser().feed(raw)]
        ratio = asyncio.run(one_call(events)) / len(raw)  # the final event carries the metadata
        for shape, reads in (("one event per read", events), ("burst (one read)", [raw])):
            runs = [per_event_us(reads, len(events), args.calls) for _ in range(args.repeat)]
            label = "with positions" if name == "full" else "without (llama)"
            print(f"| {label} | {shape} | {len(events)} | {statistics.median(runs):.2f} | {ratio:.3f} |")


if __name__ == "__main__":
    main()
