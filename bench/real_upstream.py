"""modelpool in front of a real model (issue #25): llama.cpp's `llama-server` with SmolLM2-135M, a real
model's pace and chunking rather than the sim's. Per dialect (Chat, Messages, Responses, all native on a
`llamacpp` route), sequential streamed calls alternate between three targets — llama directly, the floor
relay (uvicorn + aiohttp, no gateway logic) and `modelpool serve` — and report:

- time to the first content event, p50 per target and what the two relays add to llama's own;
- CPU per relayed chunk of the floor and of modelpool (their processes' CPU over the calls ÷ chunks), and the
  ratio.

    bash .ci/llama-server                        # once: builds llama-server + unpacks the GGUF (cached)
    python bench/real_upstream.py                # 3 dialects × 60 calls per target (~2-4 min)
    python bench/real_upstream.py --calls 200 --json bench/results/issue25/real_upstream.json

The model decodes ~100-150 tokens/s here, one token per SSE event: the relays see a real server's
pacing, its own chunk sizes and keep-alive habits. llama runs without an API key, so the floor relay (which
forwards no credentials) reaches it too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import aiohttp
import orjson

from harness.load import Target, one_call
from harness.procs import (
    CLIENT_KEY,
    Child,
    Children,
    free_port,
    http_ok,
    start_floor,
    start_gateway,
    wait_until,
)

BUILD = "b11434"
ALIAS = "smollm2-135m"
PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages", "responses": "/v1/responses"}


def start_llama(children: Children, ctx: int, slots: int) -> Child:
    root = Path(os.environ.get("MODELPOOL_LLAMA_DIR", "/var/cache/modelpool-llama")) / BUILD
    binary, model = root / "llama-server", root / "smollm2-135m-instruct.gguf"
    if not binary.exists() or not model.exists():
        sys.exit(f"llama-server {BUILD} is not built in {root}: run `bash .ci/llama-server` first")
    port = free_port()
    argv = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-c", str(ctx)]
    argv += ["-np", str(slots), "-t", "2", "--alias", ALIAS, "--no-webui", "--jinja"]
    child = children.spawn("llama", argv)
    child.url = f"http://127.0.0.1:{port}"
    wait_until("llama-server", child, lambda: http_ok(f"{child.url}/health"), 120)
    return child


def body(dialect: str, i: int, max_tokens: int) -> bytes:
    prompt = [{"role": "user", "content": f"Tell me a short fact about the number {i}."}]
    b: dict[str, Any] = {"model": ALIAS, "stream": True, "temperature": 0}
    if dialect == "responses":
        b |= {"input": prompt, "max_output_tokens": max_tokens}
    else:
        b |= {"messages": prompt, "max_tokens": max_tokens}
    return orjson.dumps(b)


async def run_dialect(targets: list[Target], dialect: str, calls: int, max_tokens: int) -> dict[str, Any]:
    """Round-robin over the targets, one call at a time (each target sees the same prompts)."""
    ttft: dict[str, list[float]] = {t.name: [] for t in targets}
    events = dict.fromkeys(ttft, 0)
    cpu = dict.fromkeys(ttft, 0.0)
    errors: dict[str, list[str]] = {t.name: [] for t in targets}
    # A new connection per call for every target: llama-server drops kept-alive connections after a few
    # replies without a word (issue #25), which aiohttp's client reports as `ServerDisconnectedError` on
    # the direct target; closing each one keeps the three targets' connection costs alike.
    async with aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(force_close=True),
        timeout=aiohttp.ClientTimeout(total=300),
        headers={"content-type": "application/json", "authorization": f"Bearer {CLIENT_KEY}"},
    ) as session:
        for i in range(calls):
            payload = body(dialect, i, max_tokens)
            # The prompt once straight to llama first (not measured): its prompt cache then serves every
            # target alike, so none pays the prompt's processing that the others skip.
            await one_call(session, targets[0], body(dialect, i, 1), True, time.perf_counter())
            for t in targets:
                before = t.server.cpu_seconds() if t.server else 0.0
                sample = await one_call(session, t, payload, True, time.perf_counter())
                if t.server:
                    cpu[t.name] += t.server.cpu_seconds() - before
                if not sample.ok:
                    errors[t.name].append(sample.error or "?")
                    continue
                ttft[t.name].append(sample.ttft or 0.0)
                events[t.name] += sample.events
    out: dict[str, Any] = {"dialect": dialect, "calls": calls, "targets": {}}
    direct = statistics.median(ttft["direct"]) if ttft["direct"] else float("nan")
    for t in targets:
        values = ttft[t.name]
        p50 = statistics.median(values) if values else float("nan")
        per_chunk = cpu[t.name] / events[t.name] * 1e6 if events[t.name] else None
        out["targets"][t.name] = {
            "ttft_p50_ms": p50 * 1e3,
            "added_ttft_p50_ms": (p50 - direct) * 1e3,
            "chunks": events[t.name],
            "cpu_us_per_chunk": per_chunk,
            "errors": errors[t.name][:5],
            "error_count": len(errors[t.name]),
        }
    floor, mp = out["targets"]["floor"], out["targets"]["modelpool"]
    if floor["cpu_us_per_chunk"] and mp["cpu_us_per_chunk"]:
        out["cpu_ratio_vs_floor"] = mp["cpu_us_per_chunk"] / floor["cpu_us_per_chunk"]
    return out


def table(results: list[dict[str, Any]]) -> str:
    head = "| dialect | llama TTFT p50 | floor adds | modelpool adds | floor CPU/chunk | modelpool CPU/chunk"
    lines = [head + " | ratio |", "|---|--:|--:|--:|--:|--:|--:|"]
    for r in results:
        d, f, m = r["targets"]["direct"], r["targets"]["floor"], r["targets"]["modelpool"]
        lines.append(
            f"| {r['dialect']} | {d['ttft_p50_ms']:.1f} ms | {f['added_ttft_p50_ms']:+.2f} ms | "
            f"{m['added_ttft_p50_ms']:+.2f} ms | {f['cpu_us_per_chunk'] or 0:.1f} µs | "
            f"{m['cpu_us_per_chunk'] or 0:.1f} µs | {r.get('cpu_ratio_vs_floor', float('nan')):.2f}× |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=60, help="streamed calls per target and dialect")
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--dialects", default="openai,anthropic,responses")
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="mp-real-upstream-"))
    children = Children(workdir)
    try:
        llama = start_llama(children, ctx=4096, slots=1)
        provider = {"id": "llama", "kind": "llamacpp", "base_url": llama.url}
        gateway = start_gateway(children, {"providers": [provider]}, "priority")
        floor = start_floor(children, llama.url + "/v1")
        results = []
        for dialect in args.dialects.split(","):
            path = PATHS[dialect]
            targets = [
                Target("direct", llama.url + path, None, dialect=dialect),
                Target("floor", floor.url + path, floor, dialect=dialect),
                Target("modelpool", gateway.url + path, gateway, dialect=dialect),
            ]
            results.append(asyncio.run(run_dialect(targets, dialect, args.calls, args.max_tokens)))
            print(json.dumps(results[-1]), flush=True)
        print(table(results))
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps({"calls": args.calls, "results": results}, indent=2))
    finally:
        children.stop_all()


if __name__ == "__main__":
    main()
