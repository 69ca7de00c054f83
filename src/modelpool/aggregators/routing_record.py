"""The aggregator's routing record, per-session served-by memory and the affinity explanation (SPEC §6).

Vercel puts `provider_metadata.gateway.routing` on the last event of a reply (gateways.md §3): OpenAI
streams on the final chunk's `choices[0].delta`, non-stream bodies on `choices[0].message`; Anthropic
streams on `message_delta` (top level of the event), non-stream Messages and Responses bodies at the top
level (`provider_metadata` / `providerMetadata`). The routing object is mostly untyped upstream, so every
field is read defensively and a record without any provider in it is no record.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import orjson

_META_KEYS = ("provider_metadata", "providerMetadata")
# What the gateway's `affinity.outcome` says when it kept the session where it was. Only "confirmed" has
# been seen (gateways.md §3.4); the others are tolerated spellings of the same idea.
_PINNED_OUTCOMES = frozenset({"confirmed", "pinned", "hit", "kept", "sticky"})
_NEW_OUTCOMES = frozenset({"new", "none", "miss", "expired", "created"})

# Seconds a provider keeps a prompt cache warm, which is how long Vercel's affinity holds a session
# there (seed 000: ~5 min for most, 10 for OpenAI and Azure, 1 h for DeepSeek's own API).
DEFAULT_CACHE_LIFETIME = 300.0
_CACHE_LIFETIMES: dict[str, float] = {"openai": 600.0, "azure": 600.0, "deepseek": 3600.0}

AffinityOutcome = Literal["pinned", "new pick", "fallback"]


def inner_cache_lifetime(slug: str) -> float:
    return _CACHE_LIFETIMES.get(slug.split("/", 1)[0].lower(), DEFAULT_CACHE_LIFETIME)


class ProviderAttempt(NamedTuple):
    provider: str
    status: int | None  # the provider's HTTP status, when the record gives it
    success: bool | None = None

    @property
    def failed(self) -> bool:
        if self.success is not None:
            return not self.success
        return self.status is not None and self.status >= 400


@dataclass(frozen=True, slots=True)
class RoutingRecord:
    final_provider: str | None  # who served the reply
    resolved_provider: str | None  # the gateway's first choice
    affinity_outcome: str | None  # as the gateway wrote it ("confirmed", "fallback", "new", …)
    attempts: tuple[ProviderAttempt, ...] = ()
    fallbacks_available: tuple[str, ...] = ()
    pinned_provider: str | None = None  # the affinity pin in force when the call arrived
    session_id: str | None = None  # `clientSessionId`, when the gateway echoes it
    model: str | None = None  # canonical slug of the model that served
    generation_id: str | None = None

    @property
    def failed_attempts(self) -> tuple[ProviderAttempt, ...]:
        return tuple(a for a in self.attempts if a.failed)

    @property
    def fell_back(self) -> bool:
        """The first-choice provider did not serve: an attempt failed and another provider answered."""
        if (self.affinity_outcome or "").lower() == "fallback":
            return True
        if any(a.failed for a in self.attempts[:-1]):
            return True
        first, final = self.resolved_provider, self.final_provider
        return first is not None and final is not None and first != final

    def to_dict(self) -> dict[str, Any]:
        return {
            "final_provider": self.final_provider,
            "resolved_provider": self.resolved_provider,
            "affinity_outcome": self.affinity_outcome,
            "pinned_provider": self.pinned_provider,
            "attempts": [
                {"provider": a.provider, "status": a.status, "success": a.success} for a in self.attempts
            ],
            "fallbacks_available": list(self.fallbacks_available),
            "session_id": self.session_id,
            "model": self.model,
            "generation_id": self.generation_id,
        }


# ---- reading ---------------------------------------------------------------------------------------


def routing_from_sse_data(data: bytes) -> RoutingRecord | None:
    """Cheap entry point for a relay: a `data:` payload (or a whole JSON body) as bytes.

    Most chunks never mention `routing`, so they are not parsed at all.
    """
    if b'"routing"' not in data:
        return None
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return find_routing(obj)


def find_routing(obj: Any) -> RoutingRecord | None:
    """The routing record in a parsed chunk, event or body of any of the three dialects, else None."""
    for meta in _metadata_candidates(obj):
        gateway = meta.get("gateway")
        if isinstance(gateway, dict):
            gen = gateway.get("generationId")
            record = parse_routing(
                gateway.get("routing"), generation_id=gen if isinstance(gen, str) else None
            )
            if record is not None:
                return record
    return None


def _metadata_candidates(obj: Any) -> Iterator[dict[str, Any]]:
    if not isinstance(obj, dict):
        return
    holders: list[Any] = []
    choices = obj.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        # In the order robust parsers check (gateways.md §3.4): message, delta, then top level.
        holders += [choices[0].get("message"), choices[0].get("delta")]
    holders.append(obj)  # Anthropic message_delta / non-stream bodies, Responses bodies, error bodies
    holders += [obj.get("delta"), obj.get("message"), obj.get("response"), obj.get("error")]
    for holder in holders:
        if isinstance(holder, dict):
            for key in _META_KEYS:
                meta = holder.get(key)
                if isinstance(meta, dict):
                    yield meta


def parse_routing(routing: Any, *, generation_id: str | None = None) -> RoutingRecord | None:
    if not isinstance(routing, dict):
        return None
    attempts = _attempts(routing)
    final = _str(routing.get("finalProvider"))
    if final is None and attempts:
        served = [a for a in attempts if a.success or (a.success is None and not a.failed)]
        final = served[-1].provider if served else None
    resolved = _str(routing.get("resolvedProvider"))
    if final is None and resolved is None and not attempts:
        return None
    affinity = routing.get("affinity")
    affinity = affinity if isinstance(affinity, dict) else {}
    fallbacks = routing.get("fallbacksAvailable")
    return RoutingRecord(
        final_provider=final,
        resolved_provider=resolved,
        affinity_outcome=_str(affinity.get("outcome")),
        attempts=tuple(attempts),
        fallbacks_available=tuple(f for f in fallbacks if isinstance(f, str))
        if isinstance(fallbacks, list)
        else (),
        pinned_provider=_str(affinity.get("pinnedProvider")),
        session_id=_str(routing.get("clientSessionId")),
        model=_str(routing.get("canonicalSlug")) or _str(routing.get("originalModelId")),
        generation_id=generation_id,
    )


def _attempts(routing: dict[str, Any]) -> list[ProviderAttempt]:
    out: list[ProviderAttempt] = []
    model_attempts = routing.get("modelAttempts")
    if isinstance(model_attempts, list):
        for ma in model_attempts:
            if isinstance(ma, dict) and isinstance(ma.get("providerAttempts"), list):
                out += [a for a in map(_attempt, ma["providerAttempts"]) if a is not None]
    if not out and isinstance(routing.get("attempts"), list):  # the documented flat form (§3.2)
        out = [a for a in map(_attempt, routing["attempts"]) if a is not None]
    return out


def _attempt(raw: Any) -> ProviderAttempt | None:
    if not isinstance(raw, dict) or _str(raw.get("provider")) is None:
        return None
    status = raw.get("statusCode")
    success = raw.get("success")
    return ProviderAttempt(
        provider=raw["provider"],
        status=status if isinstance(status, int) and not isinstance(status, bool) else None,
        success=success if isinstance(success, bool) else None,
    )


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


# ---- served-by memory and affinity -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Served:
    session: str
    record: RoutingRecord
    at: float  # clock() when the reply finished
    started_at: float | None = None  # clock() when the call was sent, if the caller knows it
    model: str | None = None  # the model id as routed (defaults to the record's slug)


@dataclass(frozen=True, slots=True)
class AffinityExplanation:
    outcome: AffinityOutcome
    provider: str | None  # who served the last reply
    previous_provider: str | None
    idle_s: float | None  # gap between the previous reply and this call
    sentence: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "provider": self.provider,
            "previous_provider": self.previous_provider,
            "idle_s": None if self.idle_s is None else round(self.idle_s, 1),
            "sentence": self.sentence,
        }


CacheLifetime = float | Callable[[str], float] | None


class ServedBy:
    """Recent routing records per session, in memory only (seed 000: a restart clears them).

    Bounded twice: the most recent `max_sessions` sessions, and `per_session` records each.
    """

    def __init__(
        self, max_sessions: int = 256, per_session: int = 8, clock: Callable[[], float] = time.time
    ) -> None:
        self.max_sessions = max_sessions
        self.per_session = per_session
        self._clock = clock
        self._sessions: OrderedDict[str, deque[Served]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sessions)

    def observe(
        self,
        session: str,
        record: RoutingRecord,
        *,
        model: str | None = None,
        started_at: float | None = None,
        at: float | None = None,
    ) -> Served:
        served = Served(
            session=session,
            record=record,
            at=self._clock() if at is None else at,
            started_at=started_at,
            model=model or record.model,
        )
        history = self._sessions.get(session)
        if history is None:
            history = self._sessions[session] = deque(maxlen=self.per_session)
        history.append(served)
        self._sessions.move_to_end(session)
        while len(self._sessions) > self.max_sessions:
            self._sessions.popitem(last=False)
        return served

    def history(self, session: str) -> list[Served]:
        return list(self._sessions.get(session, ()))

    def latest(self, session: str) -> Served | None:
        history = self._sessions.get(session)
        return history[-1] if history else None

    def latest_session(self, model: str | None = None) -> str | None:
        """The session whose reply finished last (for `model`, when given)."""
        for session in reversed(self._sessions):
            last = self._sessions[session][-1]
            if model is None or last.model == model or last.record.model == model:
                return session
        return None

    def clear(self) -> None:
        self._sessions.clear()

    def explain_affinity(
        self, session: str, cache_lifetime: CacheLifetime = None
    ) -> AffinityExplanation | None:
        history = self._sessions.get(session)
        if not history:
            return None
        last = history[-1]
        prev = history[-2] if len(history) > 1 else None
        return explain(last, prev, cache_lifetime)


def explain(last: Served, prev: Served | None, cache_lifetime: CacheLifetime = None) -> AffinityExplanation:
    """pinned / new pick / fallback for `last`, given the session's reply before it (if any).

    The gateway's own `affinity.outcome` decides when present; without it (Vercel may not send one) the
    verdict is inferred from the attempts and from the idle gap against the previous provider's cache
    lifetime, the rule the seed describes.
    """
    rec = last.record
    provider = rec.final_provider
    prev_provider = prev.record.final_provider if prev is not None else None
    idle = (last.started_at if last.started_at is not None else last.at) - prev.at if prev else None
    hint = (rec.affinity_outcome or "").lower()

    def result(outcome: AffinityOutcome, sentence: str) -> AffinityExplanation:
        return AffinityExplanation(outcome, provider, prev_provider, idle, sentence)

    if rec.fell_back:
        first = rec.pinned_provider or rec.resolved_provider
        if first is None or first == provider:
            failed = rec.failed_attempts
            first = failed[0].provider if failed else prev_provider
        codes = " → ".join(str(a.status) for a in rec.failed_attempts if a.status is not None)
        failed_how = f"failed ({codes})" if codes else "failed"
        return result(
            "fallback",
            f"Fallback: {first or 'the first-choice provider'} {failed_how}, so {provider} served the reply; "
            f"the session now stays on {provider}.",
        )
    lifetime = _lifetime(prev_provider, cache_lifetime) if prev_provider else None
    if hint in _PINNED_OUTCOMES:
        if prev is not None and idle is not None:
            return result(
                "pinned",
                f"Pinned: session affinity kept the session on {provider}, which served its previous reply "
                f"{_duration(idle)} ago.",
            )
        return result("pinned", f"Pinned: session affinity kept the session on {provider}.")
    inferred_pin = (
        hint not in _NEW_OUTCOMES
        and prev is not None
        and provider == prev_provider
        and idle is not None
        and lifetime is not None
        and idle <= lifetime
    )
    if inferred_pin:
        return result(
            "pinned",
            f"Pinned: session affinity kept the session on {provider}; its previous reply was "
            f"{_duration(idle or 0.0)} ago, within the ~{_duration(lifetime or 0.0)} cache lifetime.",
        )
    if prev is None:
        return result(
            "new pick",
            f"New pick: first message of the session, so no provider was remembered; {provider} served it.",
        )
    if idle is not None and lifetime is not None and idle > lifetime:
        return result(
            "new pick",
            f"New pick: the session was idle {_duration(idle)}, longer than {prev_provider}'s "
            f"~{_duration(lifetime)} cache lifetime, so the gateway picked again: {provider}.",
        )
    return result(
        "new pick",
        f"New pick: the gateway did not keep the session on {prev_provider}; {provider} served the reply.",
    )


def _lifetime(provider: str, cache_lifetime: CacheLifetime) -> float:
    if cache_lifetime is None:
        return inner_cache_lifetime(provider)
    if callable(cache_lifetime):
        return cache_lifetime(provider)
    return float(cache_lifetime)


def _duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
