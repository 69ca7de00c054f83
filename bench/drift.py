"""Speed that reacts (issue #18): providers change speed on a schedule while new sessions arrive.

    python bench/drift.py                       # 200 s, 3 new sessions/s
    python bench/drift.py --rate 2 --json out.json --svg results/drift.svg

The fleet (`modelpool sim --preset drift`, its own process): four routes serving `m1` (60 tokens) at
p1 300, p2 200, p3 100, p4 150 tok/s. The schedule (seconds from the start):

- 40 s: the fastest (p1) halves to 150 tok/s; a slow one (p3) becomes the fastest at 400 tok/s;
- 80 s: p3 nearly stalls (20 tok/s);
- 120 s: p3 recovers (400 tok/s).

The gateway (its own process) runs `strategy: throughput` with the default re-measuring share
(`pool.speed.explore: 10%`; `--explore` changes it). Every new session sends one streamed call; its
tokens/s = answer tokens / (last byte − first answer token). The oracle knows each moment's fastest
speed. Reported: modelpool's tokens/s over the oracle's over the run and per 10 s (a chart), the share
of new sessions kept off a slowed route from 30 s after it slowed, and how long the recovered route took
to get its place back (the first 10 s in which it served most new sessions).
Goals: ≥ 90 %, ≥ 90 %, ≤ 120 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from harness import procs

START = {"p1": 300.0, "p2": 200.0, "p3": 100.0, "p4": 150.0}
SCHEDULE: list[tuple[float, str, float]] = [
    (40, "p1", 150),
    (40, "p3", 400),
    (80, "p3", 20),
    (120, "p3", 400),
]
SLOWED = [(40.0, "p1", 80.0), (80.0, "p3", 120.0)]  # (slowed at, route, until the next change)
RECOVERED = (120.0, "p3")
BUCKET = 10.0


@dataclass
class Call:
    at: float  # seconds from the run's start
    route: str | None = None
    tps: float | None = None
    oracle: float = 0.0


def speeds_at(t: float) -> dict[str, float]:
    now = dict(START)
    for at, pid, tps in SCHEDULE:
        if t >= at:
            now[pid] = tps
    return now


def set_speed(root: str, tps: float) -> None:
    req = urllib.request.Request(root + "/_sim/speed", data=json.dumps({"tps": tps}).encode(), method="POST")
    with urllib.request.urlopen(req, timeout=5) as resp:
        resp.read()


async def one_call(http: aiohttp.ClientSession, url: str, call: Call, n: int) -> None:
    body = orjson.dumps(
        {
            "model": "m1",
            "stream": True,
            "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": f"session {n}"}],
        }
    )
    headers = {
        "authorization": f"Bearer {procs.CLIENT_KEY}",
        "content-type": "application/json",
        "x-session-id": f"drift-{n}",
    }
    first: float | None = None
    tokens = 0
    async with http.post(url, data=body, headers=headers) as resp:
        call.route = (resp.headers.get("x-modelpool-route") or "").split("/")[0] or None
        async for data in resp.content.iter_any():
            k = data.count(b'"content":"')
            if k:
                first = first or time.perf_counter()
                tokens += k
        end = time.perf_counter()
    if first is not None and end > first and tokens > 1:
        call.tps = (tokens - 1) / (end - first)


async def run(url: str, roots: dict[str, str], seconds: float, rate: float) -> list[Call]:
    calls: list[Call] = []
    tasks: list[asyncio.Task[None]] = []
    pending = list(SCHEDULE)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as http:
        t0 = time.perf_counter()
        n = 0
        while (elapsed := time.perf_counter() - t0) < seconds:
            while pending and elapsed >= pending[0][0]:
                _at, pid, tps = pending.pop(0)
                await asyncio.to_thread(set_speed, roots[pid], tps)
                print(f"  {elapsed:5.1f} s: {pid} → {tps:.0f} tok/s", flush=True)
            call = Call(at=elapsed, oracle=max(speeds_at(elapsed).values()))
            calls.append(call)
            tasks.append(asyncio.create_task(one_call(http, url, call, n)))
            n += 1
            await asyncio.sleep(max(0.0, t0 + n / rate - time.perf_counter()))
        await asyncio.gather(*tasks, return_exceptions=True)
    return calls


def analyse(calls: list[Call], seconds: float) -> dict[str, Any]:
    ok = [c for c in calls if c.tps is not None]
    share = sum(c.tps or 0 for c in ok) / sum(c.oracle for c in ok)
    buckets = []
    for b in range(int(seconds // BUCKET)):
        inside = [c for c in ok if b * BUCKET <= c.at < (b + 1) * BUCKET]
        if inside:
            got = sum(c.tps or 0 for c in inside) / sum(c.oracle for c in inside)
            routes = {r: sum(1 for c in inside if c.route == r) for r in START}
            buckets.append({"t": b * BUCKET, "share": round(got, 3), "calls": len(inside), "routes": routes})
    moved = []
    for at, pid, until in SLOWED:
        later = [c for c in calls if at + 30 <= c.at < until and c.route]
        off = sum(1 for c in later if c.route != pid) / len(later) if later else 0.0
        moved.append({"route": pid, "slowed_at": at, "sessions": len(later), "off_share": round(off, 3)})
    rec_at, rec_pid = RECOVERED
    back: float | None = None
    for b in buckets:
        if b["t"] >= rec_at and b["routes"][rec_pid] * 2 > b["calls"]:
            back = b["t"] + BUCKET - rec_at  # by the end of the first bucket it led
            break
    return {
        "calls": len(calls),
        "answered": len(ok),
        "share_of_oracle": round(share, 3),
        "moved_off": moved,
        "recovered_back_after_s": back,
        "buckets": buckets,
        "goals": {
            "share >= 90%": share >= 0.9,
            "moved off >= 90% within 30 s": all(m["off_share"] >= 0.9 for m in moved),
            "recovered within 120 s": back is not None and back <= 120,
        },
    }


def ascii_chart(buckets: list[dict[str, Any]]) -> str:
    lines = ["share of the oracle's tokens/s per 10 s (each # = 5 %)"]
    for b in buckets:
        bar = "#" * round(b["share"] * 20)
        lines.append(f"{b['t']:5.0f} s {b['share'] * 100:5.1f} % {bar}")
    return "\n".join(lines)


def svg_chart(buckets: list[dict[str, Any]]) -> str:
    w, h, pad = 480, 160, 30
    n = max(1, len(buckets))
    bars = []
    for i, b in enumerate(buckets):
        bh = (h - 2 * pad) * min(1.0, b["share"])
        x = pad + i * (w - 2 * pad) / n
        bars.append(
            f'<rect x="{x:.1f}" y="{h - pad - bh:.1f}" width="{(w - 2 * pad) / n - 2:.1f}" '
            f'height="{bh:.1f}" fill="#4a7"><title>{b["t"]:.0f} s: {b["share"]:.0%}</title></rect>'
        )
    y90 = h - pad - (h - 2 * pad) * 0.9
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-size="10">'
        f'<text x="{pad}" y="14">share of the oracle tokens/s per 10 s (line: 90 %)</text>'
        + "".join(bars)
        + f'<line x1="{pad}" x2="{w - pad}" y1="{y90:.1f}" y2="{y90:.1f}" stroke="#c33"/>'
        f'<text x="{pad}" y="{h - 8}">0 s</text><text x="{w - pad - 30}" y="{h - 8}">'
        f"{n * BUCKET:.0f} s</text></svg>\n"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=200.0)
    ap.add_argument("--rate", type=float, default=3.0, help="new sessions per second")
    ap.add_argument("--explore", default="10%", help="pool.speed.explore (the re-measuring share)")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--svg", type=Path, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-drift-") as tmp:
        children = procs.Children(Path(tmp))
        try:
            _sim, sim_config = procs.start_sim(children, preset="drift")
            roots = {pid: procs.provider_root_url(sim_config, pid) for pid in START}
            pool = {"strategy": "throughput", "sticky": True, "speed": {"explore": args.explore}}
            gw = procs.start_gateway(children, sim_config, "throughput", overrides={"pool": pool})
            calls = asyncio.run(run(gw.url + "/v1/chat/completions", roots, args.seconds, args.rate))
        finally:
            children.stop_all()
    out = analyse(calls, args.seconds)
    print(ascii_chart(out["buckets"]))
    print(json.dumps({k: v for k, v in out.items() if k != "buckets"}, indent=2))
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=2))
    if args.svg is not None:
        args.svg.write_text(svg_chart(out["buckets"]))
    return 0 if all(out["goals"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
