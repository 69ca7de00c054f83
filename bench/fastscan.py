"""The relays' byte scans (`modelpool.fastscan`), C against Python, over one burst read per dialect.

A burst read is what the simulated fleet sends for a 200-token reply (`m200`) in one go, as the relay
receives it: the scans run once per upstream read, so their cost per call is this figure.

    python bench/fastscan.py [--repeat 5] [--number 2000]
"""

from __future__ import annotations

import argparse
import timeit
import urllib.request
from collections.abc import Callable

import orjson

from modelpool.fastscan import _scan, pure
from modelpool.sim import FleetThread
from modelpool.sim.presets import bench_native_fleet

BODIES = {
    "chat": (
        "/chat/completions",
        {"stream": True, "stream_options": {"include_usage": True}, "messages": []},
    ),
    "messages": ("/messages", {"stream": True, "max_tokens": 300, "messages": []}),
    "responses": ("/responses", {"stream": True, "input": "hi"}),
}
SPECIALS = {
    "messages": (b'"message_delta"', b'"message_stop"', b'"error"'),
    "responses": (b'"response.completed"', b'"response.incomplete"', b'"response.failed"', b'"error"'),
}


def burst_reads() -> dict[str, bytes]:
    spec = bench_native_fleet()
    key = spec.providers[0].api_key or ""
    out = {}
    with FleetThread(spec) as ft:
        for name, (path, body) in BODIES.items():
            body = {**body, "model": "m200"}
            if "messages" in body:
                body["messages"] = [{"role": "user", "content": "hi"}]
            req = urllib.request.Request(
                ft.base_url("alpha") + path,
                data=orjson.dumps(body),
                headers={
                    "content-type": "application/json",
                    "authorization": f"Bearer {key}",
                    "x-api-key": key,
                },
            )
            with urllib.request.urlopen(req) as resp:
                out[name] = resp.read()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--number", type=int, default=2000)
    args = ap.parse_args()

    def us(fn: Callable[..., object], *fn_args: object) -> float:
        def run() -> object:
            return fn(*fn_args)

        return min(timeit.repeat(run, number=args.number, repeat=args.repeat)) / args.number * 1e6

    reads = burst_reads()
    marker, error, null = b'"finish_reason":null', b'"error"', b',"usage":null'
    markers = (b'ignature"', b'encrypted_content"')
    rows = []
    chat = reads["chat"]
    rows.append(
        (
            "chat: plain run",
            len(chat),
            us(pure.plain_prefix, chat, 0, marker, error),
            us(_scan.plain_prefix, chat, 0, marker, error),
        )
    )
    rows.append(
        (
            "chat: usage nulls out",
            len(chat),
            us(pure.remove_all, chat, null),
            us(_scan.remove_all, chat, null),
        )
    )
    for name in ("messages", "responses"):
        data, sp = reads[name], SPECIALS[name]
        rows.append(
            (
                f"{name}: plain run",
                len(data),
                us(pure.plain_run, data, 0, sp, b"\n\n"),
                us(_scan.plain_run, data, 0, sp, b"\n\n"),
            )
        )
    for name, data in reads.items():
        rows.append(
            (
                f"{name}: signature markers",
                len(data),
                us(pure.has_any, data, markers),
                us(_scan.has_any, data, markers),
            )
        )
    print(f"{'scan':32} {'bytes':>7} {'Python µs':>10} {'C µs':>8} {'×':>6}")
    for label, size, py, c in rows:
        print(f"{label:32} {size:7d} {py:10.1f} {c:8.1f} {py / c:6.1f}")


if __name__ == "__main__":
    main()
