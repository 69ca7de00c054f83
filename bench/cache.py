"""Prompt caching across dialects (SPEC §3.11, issue #28): a 30-turn agent session of an OpenAI client
translated onto a Messages route, input cost with `pool.prompt_cache: auto` against `off`.

The route is the sim's Anthropic provider with its prompt cache on (sim/prompt_cache.py: only what
`cache_control` marks is cached, as Anthropic does), priced like Claude Sonnet (USD per 1M: input 3, cached
input 0.30, cache write 3.75). The session grows as an agent's does: a long system prompt and tools, then
each turn adds a user message and the assistant's reply. Input cost is summed from the usage the client
received (fresh × input + cached × cached input + written × cache write).

    python bench/cache.py                 # 30 turns (a few seconds)
    python bench/cache.py --turns 60 --json bench/results/issue28/cache.json
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

import openai
import uvicorn

from modelpool.config import load_config
from modelpool.gateway import Gateway
from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider

PRICES = {"input": 3.0, "cached_input": 0.3, "cache_write": 3.75, "output": 15.0}
SYSTEM = "You are a coding agent working in a large repository. Follow the house rules. " * 80
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name}: " + "a tool of the agent. " * 40,
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
    for name in ("read_file", "write_file", "run_tests", "search")
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def session(url: str, turns: int) -> dict[str, float]:
    client = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
    history: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    cost = fresh = cached = written = 0.0
    for i in range(turns):
        history.append({"role": "user", "content": f"Turn {i}: " + "look at the next file and fix it. " * 25})
        reply = client.chat.completions.create(model="m1", messages=history, tools=TOOLS)  # type: ignore[arg-type]
        u = reply.usage
        assert u is not None
        c = u.prompt_tokens_details.cached_tokens if u.prompt_tokens_details else 0
        w = (u.model_extra or {}).get("cache_creation_input_tokens", 0)
        f = u.prompt_tokens - (c or 0) - w
        fresh, cached, written = fresh + f, cached + (c or 0), written + w
        cost += (f * PRICES["input"] + (c or 0) * PRICES["cached_input"] + w * PRICES["cache_write"]) / 1e6
        history.append({"role": "assistant", "content": reply.choices[0].message.content or "ok"})
    return {"input_cost_usd": cost, "fresh": fresh, "cached": cached, "written": written}


def run(mode: str, turns: int) -> dict[str, float]:
    model = SimModel("m1", output_tokens=20)
    spec = FleetSpec(
        [SimProvider("anth", kind="anthropic", models=[model], ttft=0.001, tps=10000, prompt_cache=True)]
    )
    with FleetThread(spec) as ft:
        cfg = ft.to_config(state={"backend": "memory"}, holidays={"source": "bundled"})
        cfg["providers"][0]["prices"] = PRICES
        cfg["pool"] = {"prompt_cache": mode}
        gw = Gateway(load_config(cfg), env={})
        port = free_port()
        server = uvicorn.Server(uvicorn.Config(gw.asgi_app, host="127.0.0.1", port=port, log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.02)
        try:
            return session(f"http://127.0.0.1:{port}", turns)
        finally:
            server.should_exit = True
            thread.join(10)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=30)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    results = {mode: run(mode, args.turns) for mode in ("auto", "off")}
    ratio = results["auto"]["input_cost_usd"] / results["off"]["input_cost_usd"]
    for mode, r in results.items():
        print(
            f"prompt_cache: {mode:4}  input cost ${r['input_cost_usd']:.4f}  "
            f"(fresh {r['fresh']:.0f}, cached {r['cached']:.0f}, written {r['written']:.0f} tokens)"
        )
    print(f"auto ÷ off = {ratio:.2f} (goal ≤ 0.40) — {'met' if ratio <= 0.40 else 'NOT met'}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"turns": args.turns, "results": results, "ratio": ratio}, indent=2))
    sys.exit(0)


if __name__ == "__main__":
    main()
