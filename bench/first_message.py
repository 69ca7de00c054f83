"""First-message tokens/s on the simulated 22-provider aggregator (issue #5): does modelpool's ranking
(fastcel, SPEC §6) start a new conversation on the fastest inner provider?

    python bench/first_message.py                         # 50 new sessions × 3 modes, ~30 s
    python bench/first_message.py --sessions 20 --concurrency 1
    python bench/first_message.py --json out.json --markdown

Each new session (a distinct `x-session-id` and a distinct first message, so the aggregator's session
affinity cannot pin it) sends its first message three ways, in one run, against the same simulated
Vercel-like aggregator (`modelpool sim --preset demo`, only its `vercel` provider, faults cleared):

- `modelpool` — through the gateway, endpoint stats already cached (the order is injected);
- `default`   — straight to the aggregator with no order: the aggregator's own pick;
- `oracle`    — straight to the aggregator with `providerOptions.gateway.order: [<fastest>]`.

Tokens/s of a call = answer tokens / (last byte − first answer token), streaming. The sim paces tokens
with real sleeps at each inner provider's published speed, so the figures mean something. See
bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from harness import procs
from harness.load import Target, new_session
from harness.report import command_line, machine_info, machine_lines, md_table, now_utc, plain_table
from harness.run import guarded_run, interrupt_on_signals
from harness.stats import percentile

MODEL = "deepseek/deepseek-v4.1-flash-1017"
MODES = ("modelpool", "default", "oracle")
GOAL = 0.95  # modelpool's mean tokens/s over the oracle's (issue #5)
PROMPT = "Describe, in a few sentences, one thing worth knowing about topic number {n}."


@dataclass
class Call:
    """One streamed first message. Times are seconds from the request being sent."""

    mode: str
    index: int  # session number, 0-based
    session: str
    message: str
    ok: bool = False
    error: str | None = None
    ttft: float | None = None  # first reasoning or answer event
    first_content: float | None = None  # first answer-text event
    done: float | None = None  # the `[DONE]` event
    end: float | None = None  # end of the body (last byte)
    content_tokens: int = 0  # answer events (the sim sends one token per event)
    usage_answer_tokens: int | None = None  # usage.completion_tokens − reasoning_tokens, when sent
    provider: str | None = None  # routing record: finalProvider
    resolved: str | None = None  # routing record: resolvedProvider (first of the plan)
    attempts: int | None = None  # routing record: totalProviderAttemptCount
    affinity: str | None = None  # routing record: affinity.outcome (new / confirmed / fallback)
    agg_session: str | None = None  # routing record: clientSessionId (the aggregator's session key)
    route: str | None = None  # x-modelpool-route (modelpool only)
    sent_order: list[str] | None = None  # the order the aggregator received (from the sim's records)
    started: float | None = None  # seconds from the start of the measured sessions to this call

    @property
    def tps(self) -> float | None:
        if not self.ok or self.first_content is None or self.end is None or self.end <= self.first_content:
            return None
        return self.content_tokens / (self.end - self.first_content)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "tps": self.tps}


# ---- one call ------------------------------------------------------------------------------------------


def make_body(model: str, message: str, order: list[str] | None) -> bytes:
    body: dict[str, Any] = {
        "model": model,
        "stream": True,
        "messages": [{"role": "user", "content": message}],
    }
    if order:
        body["providerOptions"] = {"gateway": {"order": order}}
    return orjson.dumps(body)


def _absorb(call: Call, chunk: dict[str, Any], now: float) -> None:
    """What one parsed chunk tells: answer/reasoning timing, usage, the aggregator's routing record."""
    for choice in chunk.get("choices") or ():
        delta = choice.get("delta") or {}
        if delta.get("content"):
            call.content_tokens += 1
            if call.first_content is None:
                call.first_content = now
        if call.ttft is None and (
            delta.get("content") or delta.get("reasoning") or delta.get("reasoning_content")
        ):
            call.ttft = now
        meta = delta.get("provider_metadata")
        routing = ((meta or {}).get("gateway") or {}).get("routing") if isinstance(meta, dict) else None
        if isinstance(routing, dict):
            call.provider = routing.get("finalProvider")
            call.resolved = routing.get("resolvedProvider")
            call.attempts = routing.get("totalProviderAttemptCount")
            affinity = routing.get("affinity")
            call.affinity = affinity.get("outcome") if isinstance(affinity, dict) else None
            call.agg_session = routing.get("clientSessionId")
    usage = chunk.get("usage")
    if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
        reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
        call.usage_answer_tokens = usage["completion_tokens"] - int(reasoning)


async def one_call(session: aiohttp.ClientSession, target: Target, call: Call, body: bytes) -> Call:
    headers = {**target.headers, "x-session-id": call.session}
    t0 = time.perf_counter()
    try:
        async with session.post(target.url, data=body, headers=headers) as resp:
            call.route = resp.headers.get("x-modelpool-route")
            if resp.status != 200:
                text = (await resp.read())[:200].decode(errors="replace")
                call.error = f"HTTP {resp.status}: {text}"
                return call
            pending = b""
            async for data in resp.content.iter_any():
                now = time.perf_counter() - t0  # before parsing: the client's own work is not the server's
                pending += data
                while (cut := pending.find(b"\n\n")) >= 0:
                    event, pending = pending[:cut], pending[cut + 2 :]
                    for line in event.split(b"\n"):
                        if not line.startswith(b"data:"):
                            continue
                        payload = line[5:].strip()
                        if payload == b"[DONE]":
                            call.done = now
                        elif payload:
                            chunk = orjson.loads(payload)
                            if isinstance(chunk, dict) and chunk.get("error"):
                                call.error = f"error event: {payload[:200].decode(errors='replace')}"
                            elif isinstance(chunk, dict):
                                _absorb(call, chunk, now)
            call.end = time.perf_counter() - t0
    except (aiohttp.ClientError, TimeoutError, orjson.JSONDecodeError) as exc:
        call.error = f"{type(exc).__name__}: {exc}"
        return call
    if call.error is None:
        if call.done is None:
            call.error = "stream ended without [DONE]"
        elif call.first_content is None:
            call.error = "stream carried no answer text"
    call.ok = call.error is None
    return call


# ---- the run -------------------------------------------------------------------------------------------


def session_plan(nonce: str, index: int, mode: str) -> tuple[str, str]:
    """A distinct session id and a distinct first message for every (session, mode): the aggregator keys
    affinity by the session header or, when none reaches it (the gateway forwards none), by a fingerprint
    of the first message, so neither may repeat across sessions *or* modes."""
    session = f"fm-{nonce}-{index:03d}-{mode}"
    message = f"[{nonce} #{index:03d} {mode}] " + PROMPT.format(n=index)
    return session, message


async def run_sessions(
    targets: dict[str, Target], args: argparse.Namespace, nonce: str
) -> tuple[list[Call], list[Call], float]:
    """Warm-up (one unmeasured call per mode, its own session), then `--sessions` new sessions by
    `--concurrency` workers. Each session sends its first message in every mode, the order of the modes
    rotated from one session to the next so no mode always runs first or last."""
    async with new_session(args.concurrency * len(MODES), args.timeout) as http:

        async def call(index: int, mode: str, tag: str = "") -> Call:
            session, message = session_plan(nonce + tag, index, mode)
            order = [args.oracle] if mode == "oracle" else None
            body = make_body(args.model, message, order)
            return await one_call(http, targets[mode], Call(mode, index, session, message), body)

        # --cold: no warm-up through the gateway either, so its first measured call finds no stats.
        warm = [await call(0, mode, "-warm") for mode in MODES if not (args.cold and mode == "modelpool")]
        for w in warm:
            if not w.ok:
                raise RuntimeError(f"warm-up call ({w.mode}) failed: {w.error}")
            print(f"  warm-up {w.mode}: served by {w.provider} ({w.tps or 0:.0f} tok/s)")
        calls: list[Call] = []
        next_index = 0

        async def worker() -> None:
            nonlocal next_index
            while next_index < args.sessions:
                i = next_index
                next_index += 1
                k = i % len(MODES)
                for mode in MODES[k:] + MODES[:k]:
                    started = time.monotonic() - t0
                    c = await call(i, mode)
                    c.started = started
                    calls.append(c)

        t0 = time.monotonic()
        await asyncio.gather(*(worker() for _ in range(min(args.concurrency, args.sessions))))
        return warm, calls, time.monotonic() - t0


def warm_ranking(gateway: procs.Child, model: str, timeout: float) -> dict[str, Any]:
    """GET /admin/ranking/{model} until the gateway has the endpoint stats cached (`available`)."""
    deadline = time.monotonic() + timeout
    last: dict[str, Any] = {}
    while time.monotonic() < deadline:
        last = procs.http_json(f"{gateway.url}/admin/ranking/{model}", procs.ADMIN_TOKEN)
        if last.get("available"):
            return last
        time.sleep(0.2)
    raise TimeoutError(f"the gateway's ranking of {model} is not available after {timeout:.0f}s: {last}")


def attach_sent_orders(calls: list[Call], sim_root: str) -> None:
    """What the aggregator actually received: the sim's record of each call's body, matched by message."""
    records = procs.http_json(f"{sim_root}/_sim/calls").get("calls", [])
    by_message: dict[str, list[str] | None] = {}
    for rec in records:
        body = rec.get("body") or {}
        messages = body.get("messages") or [{}]
        gw = (body.get("providerOptions") or {}).get("gateway") or {}
        by_message[str(messages[0].get("content"))] = gw.get("order")
    for c in calls:
        c.sent_order = by_message.get(c.message)


# ---- summary -------------------------------------------------------------------------------------------


def summarise(calls: list[Call], oracle: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for mode in MODES:
        mine = [c for c in calls if c.mode == mode]
        ok = [c for c in mine if c.ok and c.tps is not None]
        tps = sorted(c.tps for c in ok if c.tps is not None)
        first = sorted(c.first_content for c in ok if c.first_content is not None)
        total = sorted(c.end for c in ok if c.end is not None)
        tail = sorted(c.end - c.done for c in ok if c.end is not None and c.done is not None)
        out[mode] = {
            "calls": len(mine),
            "ok": len(ok),
            "errors": len(mine) - len(ok),
            "error_samples": sorted({c.error or "?" for c in mine if not c.ok})[:5],
            "tps_mean": statistics.fmean(tps) if tps else None,
            "tps_median": statistics.median(tps) if tps else None,
            "tps_p10": percentile(tps, 10) if tps else None,
            "tps_p90": percentile(tps, 90) if tps else None,
            "first_token_p50_ms": percentile(first, 50) * 1000 if first else None,
            "done_to_end_p50_ms": percentile(tail, 50) * 1000 if tail else None,
            "done_to_end_max_ms": tail[-1] * 1000 if tail else None,
            "total_p50_ms": percentile(total, 50) * 1000 if total else None,
            "answer_tokens": sorted(Counter(c.content_tokens for c in ok).items()),
            "usage_mismatches": sum(
                1
                for c in ok
                if c.usage_answer_tokens is not None and c.usage_answer_tokens != c.content_tokens
            ),
            "served_by": dict(Counter(c.provider or "?" for c in ok).most_common()),
            "on_oracle": sum(1 for c in ok if c.provider == oracle),
            "affinity": dict(Counter(c.affinity or "?" for c in ok).most_common()),
            "aggregator_session_keys": dict(
                Counter(_key_kind(c.agg_session, c.session) for c in ok).most_common()
            ),
            "sent_order_head": dict(
                Counter((c.sent_order or ["(none)"])[0] for c in mine if c.ok).most_common()
            ),
        }
    base = out["oracle"]
    for s in out.values():
        s["mean_over_oracle"] = _ratio(s["tps_mean"], base["tps_mean"])
        s["median_over_oracle"] = _ratio(s["tps_median"], base["tps_median"])
    return out


def _key_kind(agg_session: str | None, sent: str) -> str:
    """Which session key the aggregator used: our header, a first-message fingerprint, or none."""
    if agg_session is None:
        return "none"
    if agg_session == sent:
        return "x-session-id header"
    return "first-message fingerprint" if agg_session.startswith("fp-") else "other"


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _f(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f} %"


def tables(summary: dict[str, dict[str, Any]], oracle: str) -> tuple[list[str], list[list[str]]]:
    head = [
        "mode", "ok", "err", "tok/s mean", "tok/s median", "tok/s p10", "tok/s p90", "mean ÷ oracle",
        "median ÷ oracle", "first token p50 ms", "total p50 ms", f"on {oracle}", "served by",
    ]  # fmt: skip
    rows = []
    for mode, s in summary.items():
        served = ", ".join(f"{p} {n}" for p, n in s["served_by"].items())
        rows.append([
            mode, str(s["ok"]), str(s["errors"]), _f(s["tps_mean"]), _f(s["tps_median"]), _f(s["tps_p10"]),
            _f(s["tps_p90"]), _pct(s["mean_over_oracle"]), _pct(s["median_over_oracle"]),
            _f(s["first_token_p50_ms"], 0), _f(s["total_p50_ms"], 0), f"{s['on_oracle']}/{s['ok']}", served,
        ])  # fmt: skip
    return head, rows


def verdict(summary: dict[str, dict[str, Any]]) -> str:
    r = summary["modelpool"]["mean_over_oracle"]
    d = summary["default"]["mean_over_oracle"]
    if r is None:
        return "no verdict: modelpool produced no measurable call"
    met = "MET" if r >= GOAL else "NOT MET"
    return (
        f"goal modelpool ≥ {GOAL:.0%} of the oracle (mean tok/s): {met} ({_pct(r)}); "
        f"the aggregator's default reaches {_pct(d)}"
    )


# ---- orchestration -------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=50, help="new sessions (each sends one first message)")
    ap.add_argument("--concurrency", type=int, default=4, help="sessions in flight at once")
    ap.add_argument("--model", default=MODEL, help="model id (sent as is to the gateway and the aggregator)")
    ap.add_argument("--provider", default="vercel", help="the sim's aggregator provider")
    ap.add_argument(
        "--oracle", default="subconscious", help="the fastest inner provider (the oracle's order)"
    )
    ap.add_argument("--strategy", default="priority", help="gateway pool strategy (one route: no effect)")
    ap.add_argument(
        "--cold",
        action="store_true",
        help="do not warm the gateway's endpoint stats first (shows the cold-start calls)",
    )
    ap.add_argument("--keep-faults", action="store_true", help="leave the demo preset's random faults on")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per call")
    ap.add_argument("--warm-timeout", type=float, default=30.0, help="seconds to wait for cached stats")
    ap.add_argument("--json", type=Path, help="write the settings, summary and every call here")
    ap.add_argument("--markdown", action="store_true", help="print a block ready for bench/RESULTS.md")
    ap.add_argument("--keep-logs", action="store_true", help="keep the children's logs and configs")
    args = ap.parse_args(argv)
    if args.sessions < 1 or args.concurrency < 1:
        ap.error("--sessions and --concurrency must be ≥ 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    interrupt_on_signals()
    workdir = Path(tempfile.mkdtemp(prefix="modelpool-bench-"))
    children = procs.Children(workdir)
    doc: dict[str, Any] = {"date": now_utc(), "command": command_line(), "machine": machine_info()}
    nonce = uuid.uuid4().hex[:8]
    with guarded_run(children, workdir, args.keep_logs) as run:
        sim, sim_config = procs.start_sim(children, preset="demo")
        upstream = procs.provider_base_url(sim_config, args.provider)
        root = procs.provider_root_url(sim_config, args.provider)
        faults = procs.http_json(f"{root}/_sim/faults").get("faults", [])
        if not args.keep_faults:
            procs.set_sim_faults(root, [])
        gateway = procs.start_gateway(
            children,
            sim_config,
            args.strategy,
            providers=[args.provider],
            overrides={"holidays": {"source": "bundled"}},
        )
        print(f"sim fleet pid {sim.pid}, aggregator {upstream}; gateway pid {gateway.pid} at {gateway.url}")
        state = "kept" if args.keep_faults else "cleared"
        print(f"faults on {args.provider}: {len(faults)} in the preset, {state}")
        if not args.cold:
            ranking = warm_ranking(gateway, args.model, args.warm_timeout)
            top = " > ".join(ranking.get("order", [])[:5])
            print(f"gateway ranking of {args.model} cached: {top} … (best {ranking.get('best_tps')} tok/s)")
        targets = {
            "modelpool": Target("modelpool", f"{gateway.url}/v1/chat/completions", gateway),
            "default": Target("default", f"{upstream}/chat/completions", None),
            "oracle": Target("oracle", f"{upstream}/chat/completions", None),
        }
        doc["settings"] = {
            "model": args.model,
            "provider": args.provider,
            "oracle": args.oracle,
            "sessions": args.sessions,
            "concurrency": args.concurrency,
            "strategy": args.strategy,
            "faults_in_preset": faults,
            "faults_cleared": not args.keep_faults,
            "cold": args.cold,
            "nonce": nonce,
        }
        print(f"running {args.sessions} new sessions × {len(MODES)} modes, {args.concurrency} in flight …")
        warm, calls, wall = _run(run_sessions(targets, args, nonce))
        attach_sent_orders(calls, root)
        if args.cold:  # the ranking the gateway had by the end of the run
            ranking = warm_ranking(gateway, args.model, args.warm_timeout)
        doc["ranking"] = {k: ranking.get(k) for k in ("order", "best_tps", "stats_age_s", "min_uptime")}
        doc["wall_s"] = round(wall, 1)
        doc["gateway_log_errors"] = procs.log_errors(gateway)
        doc["machine"]["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    if run.code is not None:
        return run.code
    _output(doc, warm, calls, args)
    return 0


def _run(coro: Any) -> Any:
    try:
        import uvloop

        return uvloop.run(coro)
    except ImportError:  # pragma: no cover - uvloop ships with uvicorn[standard]
        return asyncio.run(coro)


def _output(doc: dict[str, Any], warm: list[Call], calls: list[Call], args: argparse.Namespace) -> None:
    summary = summarise(calls, args.oracle)
    head, rows = tables(summary, args.oracle)
    print()
    print(f"first message of {args.sessions} new sessions, streaming, {doc['wall_s']} s")
    print(plain_table(head, rows))
    print()
    for mode, s in summary.items():
        extra = f", order sent: {s['sent_order_head']}" if mode == "modelpool" else ""
        print(
            f"  {mode}: affinity {s['affinity']} keyed by {s['aggregator_session_keys']}, "
            f"answer tokens {s['answer_tokens']}, [DONE]→last byte p50 {_f(s['done_to_end_p50_ms'], 2)} ms "
            f"(max {_f(s['done_to_end_max_ms'], 2)}){extra}"
        )
        if s["errors"]:
            print(f"  {mode} errors: " + " | ".join(s["error_samples"]))
        if s["usage_mismatches"]:
            print(f"  {mode}: {s['usage_mismatches']} call(s) whose usage disagrees with the counted tokens")
    print(f"\n{verdict(summary)}")
    if doc.get("gateway_log_errors"):
        print(f"warning: the gateway logged {doc['gateway_log_errors']} error(s) during the run")
    doc["summary"] = summary
    doc["verdict"] = verdict(summary)
    doc["warmup"] = [c.to_dict() for c in warm]
    doc["calls"] = [c.to_dict() for c in sorted(calls, key=lambda c: (c.index, MODES.index(c.mode)))]
    for c in off_oracle(doc, args.oracle):
        print(f"  {_off_line(c)}")
    if args.json:
        args.json.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
        print(f"\nJSON written to {args.json}")
    if args.markdown:
        print("\n" + markdown_block(doc, summary, head, rows))


def _counts(counter: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counter.items())


def off_oracle(doc: dict[str, Any], oracle: str) -> list[dict[str, Any]]:
    """modelpool calls the aggregator did not serve from the oracle's provider, earliest first."""
    calls = [c for c in doc["calls"] if c["mode"] == "modelpool" and c["ok"] and c["provider"] != oracle]
    return sorted(calls, key=lambda c: c["started"] or 0.0)


def _off_line(c: dict[str, Any]) -> str:
    sent = "sent with no order" if c["sent_order"] is None else f"sent with `{c['sent_order'][0]}` first"
    at = c["started"] or 0.0
    return f"modelpool session #{c['index']} (at +{at:.2f} s) was served by {c['provider']}: {sent}"


def markdown_block(
    doc: dict[str, Any], summary: dict[str, dict[str, Any]], head: list[str], rows: list[list[str]]
) -> str:
    s = doc["settings"]
    oracle = s["oracle"]
    order = doc["ranking"]["order"] or []
    mp = summary["modelpool"]
    sent = _counts({("no order" if k == "(none)" else f"`{k}`"): v for k, v in mp["sent_order_head"].items()})
    lines = [
        f"### first_message — {doc['date']}",
        "",
        f"- command: `{doc['command']}`",
        *machine_lines(doc),
        f"- workload: `modelpool sim --preset demo`, gateway on its `{s['provider']}` aggregator only "
        f"(faults {'cleared' if s['faults_cleared'] else 'kept'}, `holidays.source: bundled`), model "
        f"`{s['model']}`, {s['sessions']} new sessions × 3 modes, streaming, {s['concurrency']} session(s) "
        f"in flight, modes rotated per session; {doc['wall_s']} s",
        f"- gateway ranking ({'fetched on demand: --cold' if s['cold'] else 'cached before the run'}): "
        f"{' > '.join(order[:6])} …",
        "",
        md_table(head, rows),
        "",
        f"- {doc['verdict']}",
        f"- modelpool: first of the order the aggregator received: {sent}; aggregator affinity outcomes "
        f"{_counts(mp['affinity'])}, keyed by {_counts(mp['aggregator_session_keys'])}",
    ]
    for c in off_oracle(doc, oracle):
        lines.append(f"- {_off_line(c)}")
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    sys.exit(main())
