"""CPU per upstream request of the HTTP client the relays use (issue #21): aiohttp's `ClientSession` against
modelpool's own `upstream.http1.ConnectionPool`, the same non-streamed POST to the same simulated upstream
(its own process), alternated, one keep-alive connection each, CPU of this process only.

    python bench/upstream_client.py [--requests 3000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
import orjson
import uvloop

from harness.procs import Children, provider_base_url, start_sim
from modelpool.upstream.http1 import ConnectionPool

BODY = orjson.dumps({"model": "m1", "messages": [{"role": "user", "content": "Say hello"}]})
HEADERS = {"content-type": "application/json", "authorization": "Bearer bench"}


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


async def measure(one: Callable[[], Awaitable[bytes]], n: int) -> tuple[float, float]:
    """(µs of CPU, µs of wall clock) per request, after a warm-up."""
    for _ in range(200):
        await one()
    c0, w0 = cpu(), time.perf_counter()
    for _ in range(n):
        await one()
    return (cpu() - c0) / n * 1e6, (time.perf_counter() - w0) / n * 1e6


async def with_aiohttp(url: str, n: int) -> tuple[float, float]:
    async with aiohttp.ClientSession() as session:

        async def one() -> bytes:
            async with session.post(url, data=BODY, headers=HEADERS) as resp:
                return await resp.read()

        return await measure(one, n)


async def with_http1(url: str, n: int) -> tuple[float, float]:
    pool = ConnectionPool()

    async def one() -> bytes:
        resp = await pool.request("POST", url, HEADERS, BODY, 5.0)
        return await resp.read()

    try:
        return await measure(one, n)
    finally:
        await pool.close()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=2, help="alternated rounds of both clients")
    args = ap.parse_args()
    children = Children(Path(tempfile.mkdtemp(prefix="mp-client-")))
    try:
        _, config = start_sim(children, "bench")
        url = provider_base_url(config, "alpha") + "/chat/completions"
        print("client                 CPU µs/request   wall µs/request")
        for _ in range(args.rounds):
            for name, run in (("aiohttp ClientSession", with_aiohttp), ("modelpool http1", with_http1)):
                c, w = uvloop.run(run(url, args.requests))
                print(f"{name:22s} {c:14.1f} {w:17.1f}")
    finally:
        children.stop_all()
    return 0


if __name__ == "__main__":
    sys.exit(main())
