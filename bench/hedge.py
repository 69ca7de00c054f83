"""Hedged first token (SPEC §3.7, issue #18): the same streamed calls with `pool.hedge` off and on.

    python bench/hedge.py                     # 400 calls per mode, concurrency 8, ~2 min
    python bench/hedge.py --calls 200 --json out.json

The fleet (`modelpool sim --preset heavy-tail`, its own process): three OpenAI routes answering in
50 ms, each stalling every tenth of its calls for 3 s before the first byte (`--random`: a tenth drawn
at random, seeded — the realised share then varies around 10 %). Two gateways (their own
processes) on that fleet, round-robin, no sticky pin: `off` (the default) and `on`
(`hedge: {enabled: true, after: p95, min_delay: 250ms, max_delay: 10s, budget: 12%}`). The modes
alternate in blocks of 50 calls so both see the same moments of the machine.

Reported: client-side time to the first answer event (p50, p90, p99, max) and the extra upstream
requests (sum of `x-modelpool-attempts` − calls). Goals (issue #18): p99 at least 3× lower with at
most 10 % extra upstream requests, p50 unchanged within noise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from harness import procs
from harness.stats import percentile

HEDGE_ON = {"enabled": True, "after": "p95", "min_delay": "250ms", "max_delay": "10s", "budget": "12%"}
MODES = ("off", "on")


async def one_call(http: aiohttp.ClientSession, url: str, n: int) -> tuple[float | None, int, str | None]:
    """(seconds to the first answer event, upstream attempts, the hedge header)."""
    body = orjson.dumps(
        {"model": "m1", "stream": True, "messages": [{"role": "user", "content": f"call {n}"}]}
    )
    headers = {"authorization": f"Bearer {procs.CLIENT_KEY}", "content-type": "application/json"}
    t0 = time.perf_counter()
    first: float | None = None
    async with http.post(url, data=body, headers=headers) as resp:
        attempts = int(resp.headers.get("x-modelpool-attempts", "1"))
        hedged = resp.headers.get("x-modelpool-hedged")
        async for data in resp.content.iter_any():
            if first is None and b'"content":"' in data:
                first = time.perf_counter() - t0
    return first, attempts, hedged


async def run(urls: dict[str, str], calls: int, concurrency: int, block: int) -> dict[str, Any]:
    results: dict[str, list[tuple[float | None, int, str | None]]] = {m: [] for m in MODES}
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(timeout=timeout) as http:
        done = 0
        while done < calls:
            n = min(block, calls - done)
            for mode in MODES:
                queue = list(range(done, done + n))

                async def worker(mode: str = mode, queue: list[int] = queue) -> None:
                    while queue:
                        i = queue.pop()
                        results[mode].append(await one_call(http, urls[mode], i))

                await asyncio.gather(*(worker() for _ in range(concurrency)))
            done += n
            print(f"  {done}/{calls} calls per mode", flush=True)
    out: dict[str, Any] = {}
    for mode, rows in results.items():
        ttfts = sorted(t for t, _, _ in rows if t is not None)
        extra = sum(a for _, a, _ in rows) - len(rows)
        out[mode] = {
            "calls": len(rows),
            "answered": len(ttfts),
            "ttft_p50_ms": round(percentile(ttfts, 50) * 1000, 1),
            "ttft_p90_ms": round(percentile(ttfts, 90) * 1000, 1),
            "ttft_p99_ms": round(percentile(ttfts, 99) * 1000, 1),
            "ttft_max_ms": round(ttfts[-1] * 1000, 1),
            "extra_upstream_requests": extra,
            "extra_share": round(extra / len(rows), 4),
            "hedged_calls": sum(1 for _, _, h in rows if h),
        }
    off, on = out["off"], out["on"]
    out["p99_ratio"] = round(off["ttft_p99_ms"] / on["ttft_p99_ms"], 2)
    out["stalled_share_off"] = round(
        sum(1 for t, _, _ in results["off"] if t and t > 2.0) / len(results["off"]), 4
    )
    out["goals"] = {
        "p99 >= 3x lower": out["p99_ratio"] >= 3,
        "extra <= 10%": on["extra_share"] <= 0.10,
        "p50 within 20%": abs(on["ttft_p50_ms"] - off["ttft_p50_ms"]) <= 0.2 * off["ttft_p50_ms"],
    }
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=400, help="streamed calls per mode")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--block", type=int, default=50, help="calls per mode before switching modes")
    ap.add_argument("--random", action="store_true", help="stall a random tenth instead of every 10th")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-hedge-") as tmp:
        children = procs.Children(Path(tmp))
        try:
            _sim, sim_config = procs.start_sim(children, preset="heavy-tail")
            if args.random:
                for pid in ("alpha", "beta", "gamma"):
                    stall = {"kind": "stall", "probability": 0.1, "delay": 3.0}
                    procs.set_sim_faults(procs.provider_root_url(sim_config, pid), [stall])
            urls = {}
            for mode in MODES:
                pool: dict[str, Any] = {"strategy": "round-robin", "sticky": False}
                if mode == "on":
                    pool["hedge"] = HEDGE_ON
                gw = procs.start_gateway(
                    children, sim_config, "round-robin", sticky=False, overrides={"pool": pool}, name=mode
                )
                urls[mode] = gw.url + "/v1/chat/completions"
            t0 = time.time()
            out = asyncio.run(run(urls, args.calls, args.concurrency, args.block))
            out["seconds"] = round(time.time() - t0, 1)
        finally:
            children.stop_all()
    print(json.dumps(out, indent=2))
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=2))
    return 0 if all(out["goals"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
