"""Quota seen before it runs out (SPEC §3.8, issue #28): upstream 429s with the rate-limit headers read
(`pool.quota` on, the default) and ignored (`pool.quota.enabled: false`).

    python bench/quota.py                      # 20 calls/s for 60 s per mode, three modes, ~3.5 min
    python bench/quota.py --modes off,on --seconds 20 --json out.json

The fleet (`modelpool sim --preset quota`, its own process, a fresh one per mode so both start with full
windows): three routes serving `m1`, each announcing 100 requests per 10 s window (10 calls/s; 30
together), `alpha` and `beta` with OpenAI's `x-ratelimit-*` headers, `gamma` a Messages route with
Anthropic's (the OpenAI client's calls are translated there). The gateway (its own process) plans them
in `priority` order, no sticky pin, default retries: every route is the first choice until it runs out,
as with an operator's preferred provider. The load is open loop (20 calls/s on a fixed schedule,
non-streamed), so a slow call never slows the offered rate.

Modes: `off` (the headers ignored) and `on` (read) on the limited fleet, and `free`: the same routes
announcing no limit at all (`--preset quota-free`), the reference for the latency a call has when no
route is ever short.

Reported per mode: the upstream 429s (the sim's own count, `/_sim/info` `rate_limited`), client-visible
errors, upstream attempts, the calls each route served, and the client-side latency (p50, p90, p99, max).
Goals (issue #28): ≥ 90 % fewer 429s with the headers read, 0 client-visible errors, median latency
unchanged (`on` against `free`). `cost`: the in-process CPU of the header check per reply.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from harness import procs
from harness.load import Target, make_body, new_session, open_block
from harness.stats import percentile

# mode → (sim preset, pool.quota). `free`: the same routes announcing no limit (the latency reference).
MODES = {
    "free": ("quota-free", {"enabled": True}),
    "off": ("quota", {"enabled": False}),
    "on": ("quota", {"enabled": True}),
}


async def load(url: str, rate: float, seconds: float) -> list[Any]:
    target = Target(
        "modelpool", url + "/v1/chat/completions", None, {"authorization": f"Bearer {procs.CLIENT_KEY}"}
    )
    body = make_body("m1", False)
    async with new_session(64, 60.0) as http:
        samples, _ = await open_block(http, target, body, int(rate * seconds), rate, stream=False)
    return samples


def run_mode(mode: str, rate: float, seconds: float, workdir: Path) -> dict[str, Any]:
    (workdir / mode).mkdir(parents=True, exist_ok=True)
    children = procs.Children(workdir / mode)
    try:
        preset, quota = MODES[mode]
        _, sim = procs.start_sim(children, preset=preset)
        # `overrides` replaces the whole pool section: the strategy, no sticky pin, the quota switch.
        pool = {"strategy": "priority", "sticky": False, "quota": quota}
        gw = procs.start_gateway(children, sim, "priority", overrides={"pool": pool}, name=f"gw-{mode}")
        samples = asyncio.run(load(gw.url, rate, seconds))
        refused = {
            p["id"]: int(
                procs.http_json(procs.provider_root_url(sim, p["id"]) + "/_sim/info")["rate_limited"]
            )
            for p in sim["providers"]
        }
        totals = sorted(s.total * 1000 for s in samples if s.ok)
        errors = Counter((s.error or "")[:80] for s in samples if not s.ok)
        return {
            "calls": len(samples),
            "client_errors": sum(errors.values()),
            "error_kinds": dict(errors),
            "upstream_429": sum(refused.values()),
            "upstream_429_by_route": refused,
            "served_by": dict(Counter(s.route for s in samples if s.ok)),
            "latency_ms": {
                "p50": round(percentile(totals, 50), 2),
                "p90": round(percentile(totals, 90), 2),
                "p99": round(percentile(totals, 99), 2),
                "max": round(max(totals), 2) if totals else None,
            },
        }
    finally:
        children.stop_all()


def header_cost() -> dict[str, float]:
    """In-process CPU per upstream reply (µs): the check every reply gets (`announces_quota` on a typical
    9-header reply without rate-limit headers), against parsing those headers at all (what the
    connection does anyway), and the whole reading of an OpenAI reply that has them (check +
    `QuotaBook.observe` + its deferred read)."""
    import timeit

    from multidict import CIMultiDict

    from modelpool.health.quota import QuotaBook
    from modelpool.health.quota_headers import announces_quota

    plain = [
        (b"date", b"Fri, 04 Dec 2026 19:00:00 GMT"), (b"content-type", b"text/event-stream"),
        (b"transfer-encoding", b"chunked"), (b"connection", b"keep-alive"), (b"server", b"uvicorn"),
        (b"x-request-id", b"req_123"), (b"openai-processing-ms", b"12"), (b"cache-control", b"no-cache"),
        (b"x-accel-buffering", b"no"),
    ]  # fmt: skip

    def parse() -> CIMultiDict[str]:
        h: CIMultiDict[str] = CIMultiDict()
        for name, value in plain:
            h.add(name.decode("latin-1"), value.decode("latin-1"))
        return h

    parsed = parse()
    limited = CIMultiDict(
        {
            "x-ratelimit-limit-requests": "100",
            "x-ratelimit-remaining-requests": "42",
            "x-ratelimit-reset-requests": "6m0s",
            "x-ratelimit-limit-tokens": "60000",
            "x-ratelimit-remaining-tokens": "59000",
            "x-ratelimit-reset-tokens": "20ms",
        }
    )
    book = QuotaBook(lambda: (1, 0, True))

    def reading() -> None:
        if announces_quota(limited):
            book.observe("alpha/m1", limited)  # no running loop here: read at once (the same work)

    def best(fn: Any, n: int) -> float:
        return min(timeit.repeat(fn, number=n, repeat=5)) / n * 1e6

    per = {
        "check_per_reply_without_headers_us": best(lambda: announces_quota(parsed), 100_000),
        "header_parsing_per_reply_us": best(parse, 50_000),
        "reading_per_reply_with_headers_us": best(reading, 20_000),
    }
    return {k: round(v, 3) for k, v in per.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", type=float, default=20.0, help="calls per second (open loop)")
    ap.add_argument("--seconds", type=float, default=60.0, help="seconds of load per mode")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated subset of " + ",".join(MODES))
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    results: dict[str, Any] = {"cost": header_cost()}
    print(f"header reading, in-process: {results['cost']}")
    with tempfile.TemporaryDirectory(prefix="bench-quota-") as tmp:
        results.update({mode: run_mode(mode, args.rate, args.seconds, Path(tmp)) for mode in modes})
    for mode in modes:
        r = results[mode]
        print(
            f"{mode:>4}: {r['calls']} calls, upstream 429s {r['upstream_429']} {r['upstream_429_by_route']}, "
            f"client errors {r['client_errors']}, served {r['served_by']}, latency ms {r['latency_ms']}"
        )
    if "off" in results and "on" in results:
        off, on = results["off"], results["on"]
        fewer = 1 - on["upstream_429"] / off["upstream_429"] if off["upstream_429"] else None
        summary: dict[str, Any] = {
            "fewer_429": round(fewer, 3) if fewer is not None else None,
            "goals": {
                "≥ 90 % fewer upstream 429s": fewer is not None and fewer >= 0.9,
                "0 client-visible errors (headers read)": on["client_errors"] == 0,
            },
        }
        if "free" in results:
            summary["p50_on_minus_free_ms"] = round(
                on["latency_ms"]["p50"] - results["free"]["latency_ms"]["p50"], 2
            )
        results["summary"] = summary
        print(json.dumps(summary, ensure_ascii=False))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
