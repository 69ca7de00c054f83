"""What one attempt sends upstream: the dialect, URL, headers and body (SPEC §1.6, §3.1 step 9, §6).

Native first: when the route speaks the client's dialect the body goes as the client sent it, except
`model` (the route's id), the effort written for the route and the aggregator's inner order — unknown
fields included — and the client's dialect headers are forwarded (`server.forward_headers`). Otherwise the
request is translated once per target dialect and adapted per route.
"""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from modelpool.aggregators import inject_order
from modelpool.health.classify import FailureKind
from modelpool.protocols.effort import nearest_effort, write_effort
from modelpool.protocols.errors import ClientError
from modelpool.protocols.gemini.wire import URL_KEYS
from modelpool.protocols.loss import translation_target
from modelpool.protocols.prompt_cache import place_breakpoints
from modelpool.protocols.translate_any import translate_request_for
from modelpool.protocols.translate_reasoning import drop_sealed_reasoning
from modelpool.routing.call import Call, Candidate
from modelpool.routing.lossy import translation_check
from modelpool.signers import FOREIGN_REASONING, strip_foreign
from modelpool.upstream.client import AttemptFailure

Order = Callable[[Call, Candidate], list[str] | None]

# Never forwarded, whatever `server.forward_headers` says: the client's own credentials, hop-by-hop and
# framing headers, and modelpool's own.
_NEVER = frozenset(
    {
        "authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "cookie",
        "host",
        "content-length",
        "content-type",
        "accept",
        "accept-encoding",
        "connection",
        "keep-alive",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)


def forwarded_headers(client_headers: Mapping[str, str], patterns: list[str]) -> tuple[tuple[str, str], ...]:
    """The client's dialect headers a native attempt passes on, verbatim (names lower-cased by ASGI)."""
    if not patterns:
        return ()
    verdicts = _verdicts(tuple(patterns))
    out = []
    for name, value in client_headers.items():
        passes = verdicts.get(name)
        if passes is None:
            passes = _passes(name, patterns, verdicts)
        if passes:
            out.append((name, value))
    return tuple(out)


@functools.lru_cache(maxsize=8)
def _verdicts(patterns: tuple[str, ...]) -> dict[str, bool]:
    """Per header rule, each header name's verdict: a client sends the same few names on every call, and
    matching them against every pattern per call was a visible share of the relay (issue #21)."""
    return {}


def _passes(name: str, patterns: list[str], verdicts: dict[str, bool]) -> bool:
    passes = (
        name not in _NEVER
        and not name.startswith("x-modelpool-")
        and any(fnmatch.fnmatchcase(name, p.lower()) for p in patterns)
    )
    if len(verdicts) < 1024:  # bounded: a client inventing header names cannot grow it
        verdicts[name] = passes
    return passes


@dataclass(slots=True)
class Prepared:
    """One attempt's upstream request."""

    dialect: str
    native: bool
    url: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    effort: str | None
    dropped: list[str]  # what the translation could not carry (SPEC §1.6), for x-modelpool-dropped
    # SPEC §14: `stream_options.include_usage` added to a native chat stream whose client did not ask for
    # usage; the relay leaves the usage chunk (and each chunk's `"usage":null`) out of the client's stream.
    usage_added: bool = False
    route: str = ""  # the route key: whose quota the reply's rate-limit headers tell (SPEC §3.8)
    # The route's time limits (SPEC §3.9: `catalog.timeouts.RouteTimeouts`); None: the client's global ones.
    timeouts: Any = None


def encode_request(body: dict[str, Any]) -> bytes:
    """orjson decodes JSON nested up to 1024 levels but encodes only 254: a deeper client body is the
    request's fault (a 400 for the client), not a 500 nor the route's fault."""
    try:
        return orjson.dumps(body)
    except orjson.JSONEncodeError as exc:
        raise AttemptFailure(
            FailureKind.REQUEST, f"request body cannot be encoded: {exc}", status=400
        ) from None


_USAGE = {"include_usage": True}
_USAGE_HEAD = b'{"stream_options":{"include_usage":true},'


def asks_usage(body: dict[str, Any]) -> bool:
    """Whether a chat client asked for the usage chunk of its stream (`stream_options.include_usage`)."""
    options = body.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


def with_usage(raw: bytes) -> bytes:
    """The client's bytes with `stream_options: {include_usage: true}` as their first field (a body with
    no `stream_options` of its own): spliced, not encoded again — an agent's conversation can be megabytes."""
    start = raw.index(b"{") + 1
    return _USAGE_HEAD + raw[start:]


def route_effort(call: Call, cand: Candidate) -> str | None:
    """SPEC §3.1 step 9: the requested effort mapped to the route's nearest tier."""
    return nearest_effort(call.effort, cand.route.capabilities.efforts)


class UpstreamRequest:
    """The call's request in each upstream dialect, translated once per dialect, adapted per attempt."""

    def __init__(
        self,
        call: Call,
        order: Order | None,
        forward: Mapping[Any, list[str]] | None = None,
        lossy: str = "tools",
    ) -> None:
        self.call = call
        self._order = order
        self._lossy = lossy  # `pool.lossy_translation`
        self._by_dialect: dict[str, dict[str, Any]] = {}
        patterns = (forward or {}).get(call.ingress) or []
        self._forwarded = forwarded_headers(call.headers, patterns) if call.headers else ()

    def for_route(self, cand: Candidate) -> Prepared:
        call = self.call
        target = translation_target(call.ingress, cand.endpoint)
        if target is None:
            raise AttemptFailure(
                FailureKind.REQUEST,
                f"route {cand.key} speaks {', '.join(cand.endpoint.dialects)}: a {call.ingress} call "
                "cannot be translated to any of them",
                status=400,
            )
        native = target == call.ingress
        foreign = {d for d, route in call.signers.items() if route != cand.key} if call.signers else None
        # SPEC §3.10: a translated attempt reads the client's body without another route's signed reasoning
        # (left out and named), so it is neither refused for it nor sent it.
        source, left_out = (
            strip_foreign(call.ingress, call.body, foreign) if foreign and not native else (None, [])
        )
        if source is call.body:
            source = None
        refusal, dropped = translation_check(call, target, self._lossy, source)
        if refusal is not None:
            # Not this route's fault: the walk moves on, and when no route can carry it the client
            # gets this 400 naming the field (SPEC §1.6).
            raise AttemptFailure(FailureKind.REQUEST, refusal, status=400)
        dropped = [*left_out, *dropped] if left_out else dropped
        effort = route_effort(call, cand)
        add_usage = native and target == "openai" and call.stream and not asks_usage(call.body)
        if (
            native
            and not foreign
            and self._as_sent(cand, effort)
            and not (add_usage and "stream_options" in call.body)
        ):
            return Prepared(
                dialect=target,
                native=True,
                url=cand.endpoint.url_for(target, cand.route.model_id, call.stream),
                headers=self.headers(cand, target, True),
                body=with_usage(call.raw) if add_usage else call.raw,
                effort=effort,
                dropped=dropped,
                usage_added=add_usage,
                route=cand.key,
                timeouts=cand.timeouts,
            )
        if native:
            body = dict(call.body)
            if target == "responses" and (kept := drop_sealed_reasoning(call.body)) is not call.body:
                # Reasoning modelpool sealed from a Messages route: no Responses upstream can read it. Left
                # out, and named like any other route's reasoning (SPEC §3.10).
                body = dict(kept)
                dropped = dropped if FOREIGN_REASONING in dropped else [*dropped, FOREIGN_REASONING]
            if add_usage:
                options = body.get("stream_options")
                body["stream_options"] = {**(options if isinstance(options, dict) else {}), **_USAGE}
        elif source is not None:
            body = dict(self._translated(target, source))
        else:
            body = dict(self._translated(target))
        if target == "gemini":  # the model and the method are in the URL
            for key in URL_KEYS:
                body.pop(key, None)
        else:
            body["model"] = cand.route.model_id
        if foreign:  # SPEC §3.10: another route's signed reasoning never goes here
            body, left_out = strip_foreign(target, body, foreign)
            dropped = [*dropped, *(n for n in left_out if n not in dropped)]
        if call.effort is not None and (effort != call.effort or not native):
            # Native: the client's own effort fields stay as sent unless the route needs another tier.
            body = write_effort(target, body, effort, cand.route.capabilities.efforts)
        if not native and target != "gemini":
            if target == "openai" and call.stream:
                body["stream"] = True
                body["stream_options"] = {"include_usage": True}  # usage even across translation
            else:
                body["stream"] = call.stream
        if self._order is not None and cand.endpoint.aggregator:
            # fastcel (SPEC §6): the inner providers fastest first, in the body's own shape; a body that
            # carries its own routing, or stats that are unavailable, leave it as it is.
            inner = self._order(call, cand)
            if inner:
                body = inject_order(body, cand.endpoint.kind, inner) or body
        return Prepared(
            dialect=target,
            native=native,
            url=cand.endpoint.url_for(target, cand.route.model_id, call.stream),
            headers=self.headers(cand, target, native),
            body=encode_request(body),
            effort=effort,
            dropped=dropped,
            usage_added=add_usage,
            route=cand.key,
            timeouts=cand.timeouts,
        )

    def _as_sent(self, cand: Candidate, effort: str | None) -> bool:
        """Whether a native attempt's body is the client's bytes unchanged: the route's model id is the one
        the client named, no effort tier to rewrite, no inner order to inject, no sealed reasoning to drop.
        Then nothing is encoded again (an agent's conversation can be megabytes of JSON)."""
        call = self.call
        if not call.raw:
            return False
        if call.body.get("model") != cand.route.model_id and call.ingress != "gemini":
            return False  # a Gemini body names no model (it is in the URL)
        if call.effort is not None and effort != call.effort:
            return False
        if self._order is not None and cand.endpoint.aggregator:
            return False
        return call.ingress != "responses" or drop_sealed_reasoning(call.body) is call.body

    def headers(self, cand: Candidate, dialect: str, native: bool) -> tuple[tuple[str, str], ...]:
        """Provider auth for the dialect; the client's dialect headers on a native attempt (they replace a
        default of the same name, e.g. `anthropic-version`); aggregators also get the conversation's id so
        their own session affinity follows conversations rather than a fingerprint of the first message."""
        call = self.call
        base = cand.endpoint.headers_for(dialect)
        if native and self._forwarded:
            names = {n for n, _ in self._forwarded}
            base = (*(h for h in base if h[0].lower() not in names), *self._forwarded)
        if cand.endpoint.aggregator and call.session_id and not call.session_id.startswith("fp-"):
            base = (*base, ("x-session-id", call.session_id))
        if call.trace_headers:  # W3C trace context of this attempt's span (tracing on, SPEC §1.2)
            base = (*base, *call.trace_headers)
        return base

    def _translated(self, target: str, source: dict[str, Any] | None = None) -> dict[str, Any]:
        """The translation into `target`, once per dialect — or of `source` (the body without other routes'
        signatures, per attempt) when given."""
        base = self._by_dialect.get(target) if source is None else None
        if base is None:
            try:
                base = self._translate(target, source)
                if source is None:
                    self._by_dialect[target] = base
            except ClientError as err:
                # The request cannot be carried into this route's dialect (e.g. an unknown content part):
                # the request's fault, not the route's — another route may still take it as it is.
                raise AttemptFailure(FailureKind.REQUEST, err.message, status=err.status) from None
        return base

    def _translate(self, target: str, source: dict[str, Any] | None = None) -> dict[str, Any]:
        body = translate_request_for(self.call.ingress, self.call.body if source is None else source, target)
        if target == "anthropic" and self.call.prompt_cache and self.call.ingress != "anthropic":
            # SPEC §3.11: the translation is its own copy, marked in place
            body = place_breakpoints(body)
        return body
