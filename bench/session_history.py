"""Per-call CPU of the session history (SPEC §8, issue #26), in µs per call, in process.

On the request path a finished call keeps a record of plain values (`observe.history.session_record`, a
tuple) and appends it to the history book's pending list; reading the session id also looks at the agent
CLIs' own headers and Claude Code's JSON `metadata.user_id`. Measured here:
- `Observer.done` of a served Claude Code call with the record made and appended, against the same `done`
  with no record at all (A/B, interleaved rounds, best of N): the request-path cost of the history;
- `session_id()` on Claude Code's recorded request (its header), the same without the header (its JSON
  `user_id` parsed), and a request that names no session (the fingerprint);
- off the request path, for the record: the background flush per call (describe the record, add it to the
  memory store; the sqlite store's write runs in a worker thread and is timed as process CPU).

    python bench/session_history.py [--calls 20000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import tempfile
import time
import timeit
from pathlib import Path
from typing import Any

import uvloop

import modelpool.observe as observe_face
from modelpool.config import load_config
from modelpool.gateway import Gateway
from modelpool.history import SqliteHistoryStore
from modelpool.observe.history import session_record
from modelpool.observe.trace import CallTrace
from modelpool.routing.call import Candidate
from modelpool.routing.session import session_id
from modelpool.walk.walker import AttemptResult

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "protocols" / "corpus" / "clients"
USAGE = {"prompt_tokens": 9700, "completion_tokens": 60, "cached_tokens": 0, "cache_creation_tokens": 0}


def recorded() -> tuple[dict[str, str], dict[str, Any]]:
    data = json.loads((CORPUS / "claude_code_turn1.json").read_text())
    body = data["body"]
    body["model"] = "m1"
    return {k.lower(): v for k, v in data["headers"].items()}, body


def gateway() -> Gateway:
    cfg: dict[str, Any] = {
        "state": {"backend": "memory"},
        "holidays": {"source": "bundled"},
        "providers": [
            {"id": "alpha", "kind": "anthropic", "base_url": "http://127.0.0.1:9", "api_key": "x",
             "models": ["m1"], "prices": {"input": 3.0, "output": 15.0}}
        ],
    }  # fmt: skip
    return Gateway(load_config(cfg), env={})


async def _attempt(cand: Candidate) -> AttemptResult:
    return AttemptResult(ttft=0.05, tokens_per_s=None)


async def served_trace(gw: Gateway) -> CallTrace:
    headers, body = recorded()
    trace = CallTrace("anthropic", headers)
    trace.call = call = gw.prepare("anthropic", body, headers)
    trace.walker = walker = gw.walker(call)
    await walker.run(_attempt)
    walker.state.add_usage("alpha/m1", USAGE)
    return trace


def _no_record(trace: CallTrace) -> None:
    """No history: what `done` cost before issue #26 (no record made, nothing appended)."""
    return None


def done_loop(gw: Gateway, trace: CallTrace, calls: int, history: bool) -> float:
    observer = gw.observer
    pending = gw.history.pending
    observe_face.session_record = session_record if history else _no_record  # type: ignore[assignment]
    t0 = time.process_time()
    for i in range(calls):
        observer.done(trace)
        if i & 1023 == 1023:
            pending.clear()  # the background flush takes them; its cost is measured apart below
    cpu = time.process_time() - t0
    pending.clear()
    return cpu / calls * 1e6


async def flush_cost(gw: Gateway, trace: CallTrace, calls: int, store: Any = None) -> float:
    book = gw.history
    if store is not None:
        book.store = store
    t0 = time.process_time()
    record = session_record(trace)
    for i in range(calls):
        book.pending.append(record)
        if i % 200 == 199:  # ~ what a busy gateway's 0.5 s flush carries
            await book.flush()
    await book.flush()
    return (time.process_time() - t0) / calls * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    gw = gateway()
    trace = uvloop.run(served_trace(gw))
    gc.freeze()
    runs: dict[str, list[float]] = {"without": [], "with": []}
    for _ in range(args.repeat):  # interleaved: both see the same machine
        runs["without"].append(done_loop(gw, trace, args.calls, history=False))
        runs["with"].append(done_loop(gw, trace, args.calls, history=True))
    without, with_history = min(runs["without"]), min(runs["with"])

    headers, body = recorded()
    no_header = {k: v for k, v in headers.items() if k != "x-claude-code-session-id"}
    anonymous = {k: v for k, v in body.items() if k != "metadata"}

    def per_call(fn: Any) -> float:
        return min(timeit.repeat(fn, number=args.calls, repeat=args.repeat)) / args.calls * 1e6

    sid_header = per_call(lambda: session_id(headers, body, "m1"))
    sid_json = per_call(lambda: session_id(no_header, body, "m1"))
    sid_fp = per_call(lambda: session_id(no_header, anonymous, "m1"))

    async def background() -> tuple[float, float]:
        mem = await flush_cost(gw, trace, args.calls)
        with tempfile.TemporaryDirectory() as d:
            store = SqliteHistoryStore(Path(d) / "state.db")
            sql = await flush_cost(gw, trace, args.calls // 4, store)
            await store.close()
        return mem, sql

    mem, sql = asyncio.run(background())
    ref = min(timeit.repeat("sum(range(100))", number=args.calls, repeat=args.repeat)) / args.calls * 1e6
    print(f"reference: sum(range(100))                    {ref:6.2f} µs  (how fast this machine is now)")
    print(f"Observer.done, no history record:             {without:6.2f} µs/call")
    print(f"Observer.done, history record made, appended: {with_history:6.2f} µs/call")
    print(f"  request path added by the history:          {with_history - without:6.2f} µs/call  (goal <= 5)")
    print(f"session_id: Claude Code's header              {sid_header:6.2f} µs/call")
    print(f"session_id: Claude Code's JSON user_id        {sid_json:6.2f} µs/call")
    print(f"session_id: no session named (fingerprint)    {sid_fp:6.2f} µs/call")
    print(f"background flush per call, memory store:      {mem:6.2f} µs/call  (off the request path)")
    print(f"background flush per call, sqlite store:      {sql:6.2f} µs/call  (process CPU, worker thread)")


if __name__ == "__main__":
    main()
