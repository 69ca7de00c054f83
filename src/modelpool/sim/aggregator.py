"""Vercel-like aggregator: picks an inner provider per call, publishes endpoint stats, writes routing records.

Every dialect's body carries the options the same way, as top-level `providerOptions.gateway` (Chat
Completions, Messages and Responses alike, gateways.md §2.3); the routing record goes back in each
dialect's place (see the renderers).

Inner choice (shared/reference/gateways.md §2.2): eligible = status 0, tools when the call has tools, context
large enough; `only` narrows that set; `order` puts its listed providers first (unlisted ones stay as
fallbacks, unless `only` excludes them); no `order` → `default_inner`, else the middle eligible provider.
With `affinity_ttl` set, a session returns to the inner provider that served it last until it idles out.
"""

from __future__ import annotations

import hashlib
import math
import time
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from multidict import CIMultiDictProxy

from modelpool.sim.errors import SimError
from modelpool.sim.openai_provider import CREATED
from modelpool.sim.plan import FAST, Speed
from modelpool.sim.request import CallRequest
from modelpool.sim.spec import InnerProvider, SimModel, SimProvider, scheduled_tps

_SESSION_HEADERS = (
    "x-session-affinity",
    "x-session-id",
    "x-modelpool-session",
    "x-deepseek-harness-session-id",
)


@dataclass(slots=True)
class Attempt:
    provider: str
    status: int
    success: bool
    error: str | None = None


@dataclass(slots=True)
class Routing:
    """One call's plan and what happened; rendered into `provider_metadata.gateway`."""

    model_id: str
    planned: list[str]
    only: list[str] | None
    session: str | None
    pinned: str | None  # affinity pin in force when the call arrived
    attempts: list[Attempt] = field(default_factory=list)
    generation_id: str = field(default_factory=lambda: f"gen_{uuid.uuid4().hex[:26].upper()}")

    def meta(self) -> dict[str, Any]:
        final = self.attempts[-1].provider if self.attempts else None
        attempts = [_attempt_json(a) for a in self.attempts]
        routing: dict[str, Any] = {
            "originalModelId": self.model_id,
            "canonicalSlug": self.model_id,
            "resolvedProvider": self.planned[0] if self.planned else None,
            "finalProvider": final,
            "fallbacksAvailable": self.planned[1:],
            "planningReasoning": self._reasoning(),
            "modelAttemptCount": 1,
            "totalProviderAttemptCount": len(attempts),
            "modelAttempts": [
                {
                    "modelId": self.model_id,
                    "canonicalSlug": self.model_id,
                    "success": bool(self.attempts and self.attempts[-1].success),
                    "providerAttemptCount": len(attempts),
                    "providerAttempts": attempts,
                }
            ],
        }
        if self.session is not None:
            routing["clientSessionId"] = self.session
            routing["affinity"] = {"outcome": self._affinity_outcome(final), "pinnedProvider": self.pinned}
        return {"gateway": {"routing": routing, "generationId": self.generation_id}}

    def _reasoning(self) -> str:
        if self.only:
            return f"Provider set restricted to: {', '.join(self.only)}."
        order = " → ".join(f"{p}(system)" for p in self.planned)
        return f"System credentials planned for: {', '.join(self.planned)}. Total execution order: {order}"

    def _affinity_outcome(self, final: str | None) -> str:
        if self.pinned is None:
            return "new"
        return "confirmed" if final == self.pinned else "fallback"


def _attempt_json(a: Attempt) -> dict[str, Any]:
    out: dict[str, Any] = {
        "provider": a.provider,
        "credentialType": "system",
        "providerRequestId": f"prov-{uuid.uuid4().hex[:12]}",
        "statusCode": a.status,
        "success": a.success,
    }
    if a.error:
        out["error"] = a.error
    return out


class Aggregator:
    def __init__(self, provider: SimProvider, fast: bool, elapsed: Callable[[], float] = lambda: 0.0) -> None:
        self.provider = provider
        self.fast = fast
        self.elapsed = elapsed  # seconds since the fleet started (inner speed schedules)
        self._pins: dict[str, tuple[str, float]] = {}  # session → (inner, monotonic time of last use)

    def plan(self, req: CallRequest, headers: CIMultiDictProxy[str]) -> Routing:
        eligible = [i for i in self.provider.inner if _eligible(i, req)]
        only = _names(req.gateway.get("only"))
        if only is not None:
            wanted = {n.lower() for n in only}
            eligible = [i for i in eligible if i.name.lower() in wanted]
        names = self._order([i.name for i in eligible], _names(req.gateway.get("order")))
        if not names:
            allowed = ", ".join(only) if only else "none eligible"
            msg = f"No providers available for model {req.model}. Allowed providers: {allowed}."
            raise SimError(400, msg, "invalid_request_error", "no_providers_available")
        session = self._session(req, headers)
        pinned = self._pinned(session) if session is not None else None
        if pinned is not None and pinned in names:
            names.remove(pinned)
            names.insert(0, pinned)
        return Routing(req.model, names, only, session, pinned)

    def _order(self, eligible: list[str], order: list[str] | None) -> list[str]:
        """`order` first (listed, eligible), then the rest in the aggregator's own preference."""
        head: list[str] = []
        if order:
            lowered = {n.lower(): n for n in eligible}
            head = list(dict.fromkeys(lowered[o.lower()] for o in order if o.lower() in lowered))
        return head + self._default_order([n for n in eligible if n not in head])

    def _default_order(self, names: list[str]) -> list[str]:
        if not names:
            return []
        first = self.provider.default_inner
        if first not in names:
            first = names[len(names) // 2]
        return [first] + [n for n in names if n != first]

    def _session(self, req: CallRequest, headers: CIMultiDictProxy[str]) -> str | None:
        if self.provider.affinity_ttl is None:
            return None
        for name in _SESSION_HEADERS:
            if headers.get(name):
                return headers[name]
        body = req.body
        meta = body.get("metadata")
        for value in (
            body.get("prompt_cache_key"),
            body.get("user"),
            meta.get("user_id") if isinstance(meta, dict) else None,
        ):
            if isinstance(value, str) and value:
                return value
        turns = body.get("messages") if req.dialect != "responses" else body.get("input")
        if isinstance(turns, str):
            turns = [{"role": "user", "content": turns}]
        first_user = next((m for m in turns or [] if isinstance(m, dict) and m.get("role") == "user"), {})
        raw = orjson.dumps([req.model, first_user.get("content")], option=orjson.OPT_SORT_KEYS)
        return "fp-" + hashlib.sha1(raw).hexdigest()[:16]

    def _pinned(self, session: str) -> str | None:
        pin = self._pins.get(session)
        ttl = self.provider.affinity_ttl
        if pin is None or ttl is None or time.monotonic() - pin[1] > ttl:
            return None
        return pin[0]

    def settle(self, routing: Routing) -> None:
        """Remember who served the session; a failed pin is forgotten (Vercel drops it on failure)."""
        if routing.session is None or not routing.attempts:
            return
        last = routing.attempts[-1]
        if last.success:
            self._pins[routing.session] = (last.provider, time.monotonic())
        else:
            self._pins.pop(routing.session, None)

    def inner(self, name: str) -> InnerProvider:
        return next(i for i in self.provider.inner if i.name == name)

    def speed(self, name: str) -> Speed:
        if self.fast:
            return FAST
        inner = self.inner(name)
        ttft = self.provider.ttft if inner.ttft_ms is None else inner.ttft_ms / 1000.0
        tps = self.inner_tps(inner) or self.provider.tps
        return Speed(max(0.0, ttft), tps if tps > 0 else math.inf)

    def inner_tps(self, inner: InnerProvider) -> float | None:
        return scheduled_tps(inner.schedule, self.elapsed(), inner.tps)

    def endpoints_body(self, model: SimModel) -> bytes:
        data: dict[str, Any] = {
            "id": model.id,
            "name": _display(model.id),
            "created": CREATED,
            "released": CREATED,
            "description": f"{_display(model.id)} (simulated)",
            "architecture": {
                "tokenizer": None,
                "instruct_type": None,
                "modality": "text+image→text" if model.images else "text→text",
                "input_modalities": ["text", "image"] if model.images else ["text"],
                "output_modalities": ["text"],
            },
            "endpoints": [_endpoint(i, model, self.inner_tps(i)) for i in self.provider.inner],
        }
        if model.efforts:
            data["reasoning"] = {"supported_efforts": [e for e in model.efforts if e != "off"]}
        return orjson.dumps({"data": data})

    def models_body(self) -> bytes:
        """Vercel catalog shape (`type`, `context_window`, `tags`, `pricing` as USD-per-token strings)."""
        data = []
        for m in self.provider.models:
            tags = ["tool-use"] if m.tools else []
            tags += ["reasoning"] if m.reasoning_tokens or m.efforts else []
            tags += ["vision"] if m.images else []
            data.append({
                "id": m.id, "object": "model", "created": CREATED, "released": CREATED,
                "owned_by": m.id.split("/", 1)[0] if "/" in m.id else self.provider.id,
                "name": _display(m.id), "description": f"{_display(m.id)} (simulated)",
                "context_window": m.context_window or 128000, "max_tokens": 8192, "type": m.declared_type,
                "tags": tags, "pricing": {"input": "0.00000015", "output": "0.0000006"},
            })  # fmt: skip
        return orjson.dumps({"object": "list", "data": data})


def _eligible(inner: InnerProvider, req: CallRequest) -> bool:
    if inner.status != 0:
        return False
    if req.tool_names and not inner.tools:
        return False
    return inner.context_length >= req.prompt_tokens


def _names(value: Any) -> list[str] | None:
    if not isinstance(value, list):
        return None
    return [v for v in value if isinstance(v, str)]


def _display(model_id: str) -> str:
    return model_id.rsplit("/", 1)[-1].replace("-", " ").title()


def _endpoint(inner: InnerProvider, model: SimModel, tps: float | None) -> dict[str, Any]:
    params = ["max_tokens", "temperature", "stop"]
    params += ["tools", "tool_choice"] if inner.tools else []
    params += ["reasoning", "include_reasoning"] if model.reasoning_tokens or model.efforts else []
    measured = tps is not None  # no recent traffic ⇒ every metric is null (live fixture A)
    uptime = inner.uptime_15m if measured else None
    prompt = 0.10 + (zlib.crc32(inner.name.encode()) % 25) / 100  # USD per million, stable per name
    return {
        "name": f"{inner.name} | {model.id}",
        "model_name": _display(model.id),
        "context_length": inner.context_length,
        "pricing": {"prompt": _per_token(prompt), "completion": _per_token(prompt * 4), "discount": 0},
        "provider_name": inner.name,
        "tags": ["tool-use"] if inner.tools else [],
        "quantization": None,
        "max_completion_tokens": 8192,
        "max_prompt_tokens": None,
        "supported_parameters": params,
        "status": inner.status,
        "uptime_last_15m": uptime,
        "uptime_last_1h": None if uptime is None else min(100.0, uptime + 0.4),
        "uptime_last_1d": None if uptime is None else round(min(100.0, uptime) * 0.998, 4),
        "latency_last_1h": _pair(inner.ttft_ms, 1.7) if measured else None,
        "throughput_last_1h": _pair(tps, 1.15) if measured else None,
        "supports_implicit_caching": True,
    }


def _pair(p50: float | None, spread: float) -> dict[str, float] | None:
    return None if p50 is None else {"p50": p50, "p95": round(p50 * spread, 2)}


def _per_token(per_million: float) -> str:
    return f"{per_million / 1e6:.10f}".rstrip("0")
