"""Per-call cost of OpenTelemetry tracing (issue #20): `Observer.begin` + the timed attempt wrapper +
`Observer.done`, with `tracing:` absent, with `sample: 0` and with `sample: 1`, in µs per call.

In-process, like `observe_cost.py`: a served non-stream call's shapes (one attempt, usage in the body),
the log line off. Two figures per setting: the event loop thread's CPU per call (what a call pays on the
loop) and the process's CPU per call (adds the batch exporter's thread: encoding and sending the spans).
The spans go to a loopback OTLP/HTTP receiver in a child process (`--collector dead`: a closed port).

    python bench/tracing_cost.py [--calls 20000] [--collector live|dead]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import socket
import subprocess
import sys
import time
from types import SimpleNamespace
from typing import Any

from modelpool.config import load_config
from modelpool.gateway import Gateway

RECEIVER = """
import sys
from aiohttp import web
async def traces(request):
    await request.read()
    return web.Response(body=b"", content_type="application/x-protobuf")
app = web.Application()
app.router.add_post("/v1/traces", traces)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None)
"""


async def _attempt(cand: object) -> object:
    return SimpleNamespace(ttft=0.01)


def _fake() -> tuple[Any, Any, Any]:
    route = SimpleNamespace(provider_id="deepseek", model_id="deepseek-flash")
    cand = SimpleNamespace(key="deepseek/deepseek-flash", route=route)
    pool = SimpleNamespace(id="deepseek-v4.1-flash")
    call = SimpleNamespace(pool=pool, stream=False, requested_model="deepseek-v4.1-flash", trace_headers=())
    state = SimpleNamespace(attempts=[], switched_from=None, effort="high")
    state.metadata = lambda: {"route": cand.key, "attempts": 1}
    walker = SimpleNamespace(state=state, served=cand)
    relay = SimpleNamespace(obj={"usage": {"prompt_tokens": 120, "completion_tokens": 40}})
    return call, walker, relay


async def _run(gw: Gateway, calls: int, headers: dict[str, str]) -> tuple[float, float]:
    call, walker, relay = _fake()
    obs = gw.observer
    gc.collect()
    t0, c0 = time.thread_time(), time.process_time()
    for i in range(calls):
        trace = obs.begin("openai", headers)
        trace.call, trace.walker, trace.relay = call, walker, relay
        await trace.timed(_attempt, obs.in_flight)(walker.served)
        obs.done(trace)
        if i % 1000 == 999:
            await asyncio.sleep(0.05)  # a pause now and then: the exporter keeps up (no dropped spans)
    loop_us = (time.thread_time() - t0) / calls * 1e6
    if obs.tracing is not None:
        await asyncio.to_thread(obs.tracing.processor.force_flush)  # the exporter's share of the work
    cpu_us = (time.process_time() - c0) / calls * 1e6
    return loop_us, cpu_us


def _gateway(tracing: dict[str, Any] | None) -> Gateway:
    cfg: dict[str, Any] = {"state": {"backend": "memory"}, "holidays": {"source": "bundled"}}
    if tracing is not None:
        cfg["tracing"] = tracing
    gw = Gateway(load_config(cfg), env={})
    gw.observer.start_tracing(gw.loaded.config.tracing)
    return gw


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=5, help="best of N runs (a shared machine is noisy)")
    ap.add_argument("--collector", choices=["live", "dead"], default="live")
    args = ap.parse_args()
    logging.getLogger().setLevel(logging.WARNING)
    port = _port()
    receiver = None
    if args.collector == "live":
        receiver = subprocess.Popen([sys.executable, "-c", RECEIVER, str(port)])
        time.sleep(1.5)
    endpoint = f"http://127.0.0.1:{port}"
    client_trace = {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
    settings: list[tuple[str, dict[str, Any] | None, dict[str, str]]] = [
        ("tracing absent", None, {}),
        ("sample: 0", {"otlp_endpoint": endpoint, "sample": 0.0}, {}),
        ("sample: 1", {"otlp_endpoint": endpoint, "sample": 1.0}, {}),
        ("sample: 1, client traceparent", {"otlp_endpoint": endpoint, "sample": 1.0}, client_trace),
    ]
    try:
        print(f"collector: {args.collector} ({endpoint}); {args.calls} calls, best of {args.repeat}")
        for name, tracing, headers in settings:
            gw = _gateway(tracing)
            runs = [asyncio.run(_run(gw, args.calls, headers)) for _ in range(args.repeat)]
            loop_us = min(r[0] for r in runs)
            cpu_us = min(r[1] for r in runs)
            print(f"{name:32s} loop thread CPU {loop_us:7.2f} µs/call   process CPU {cpu_us:7.2f} µs/call")
            gw.observer.stop_tracing()
    finally:
        if receiver is not None:
            receiver.terminate()
            receiver.wait(5)


if __name__ == "__main__":
    main()
