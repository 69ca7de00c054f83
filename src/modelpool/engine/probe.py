"""Bounded live probes (`modelpool probe`, `POST /admin/probe`): one minimal request per route.

A probe refreshes a route's TTFT/throughput and health (a success ends a rest; a failure starts one), and
spends a little quota — so it is bounded by a request count and a timeout, and reports what it spent.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from modelpool.relays.choose import CallOnceRelay
from modelpool.routing.call import Call, Candidate
from modelpool.upstream.client import AttemptFailure

if TYPE_CHECKING:
    from modelpool.engine import Engine

PROBE_MESSAGES = [{"role": "user", "content": "ping"}]
MAX_PROBE_REQUESTS = 64


@dataclass(slots=True)
class ProbeReport:
    results: list[dict[str, Any]] = field(default_factory=list)
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    skipped: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "results": self.results,
            "spent": {
                "requests": self.requests,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
            },
            "skipped": self.skipped,
        }


def probe_targets(gw: Engine, names: list[str]) -> list[str]:
    """Route keys to probe: every candidate route of the named pools (or named routes); all when empty."""
    rt = gw.runtime
    if not names:
        names = list(rt.catalog.pools)
    keys: list[str] = []
    for name in names:
        if name in rt.catalog.routes:
            keys.append(name)
            continue
        pool = rt.catalog.resolve(name)  # UnknownModel → 404 at the API
        keys.extend(r.key for r in rt.catalog.candidate_routes(pool))
    return list(dict.fromkeys(keys))


async def probe(gw: Engine, names: list[str], max_requests: int, timeout: float) -> ProbeReport:
    report = ProbeReport()
    keys = probe_targets(gw, names)
    budget = max(0, min(max_requests, MAX_PROBE_REQUESTS))
    report.skipped = keys[budget:]
    results = await asyncio.gather(*(_probe_one(gw, key, timeout) for key in keys[:budget]))
    for result, usage in results:
        report.results.append(result)
        report.requests += 1
        report.prompt_tokens += int(usage.get("prompt_tokens") or 0)
        report.completion_tokens += int(usage.get("completion_tokens") or 0)
    return report


async def _probe_one(gw: Engine, key: str, timeout: float) -> tuple[dict[str, Any], dict[str, Any]]:
    rt = gw.runtime
    route = rt.catalog.routes[key]
    cand = Candidate(route, rt.endpoints[route.provider_id], ["probe"], rt.route_timeouts()[route.key])
    pool = rt.catalog.resolve(key)
    body = {"model": route.model_id, "messages": PROBE_MESSAGES, "max_tokens": 1, "stream": False}
    call = Call(ingress="openai", body=body, stream=False, pool=pool, requested_model=key, purpose="probe")
    relay = CallOnceRelay(call, gw.client)  # an Anthropic-only route gets a Messages probe
    t0 = time.monotonic()
    try:
        async with asyncio.timeout(timeout):
            result = await relay.attempt(cand)
    except (AttemptFailure, TimeoutError) as exc:
        failure = exc if isinstance(exc, AttemptFailure) else None
        if failure is not None:
            failure.message = cand.endpoint.redact(failure.message)
            gw.sink.failure(key, failure)
        kind = failure.kind.value if failure else "network"
        return {
            "route": key,
            "ok": False,
            "kind": kind,
            "error": failure.message if failure else "probe timeout",
        }, {}
    gw.sink.success(key, result)
    raw = relay.usage if isinstance(relay.usage, dict) else {}
    usage = {
        "prompt_tokens": raw.get("prompt_tokens", raw.get("input_tokens")),
        "completion_tokens": raw.get("completion_tokens", raw.get("output_tokens")),
    }
    elapsed = (time.monotonic() - t0) * 1000
    return {"route": key, "ok": True, "ttft_ms": round(elapsed, 1)}, usage
