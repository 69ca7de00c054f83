"""The routing core's view of one client call and of the plan made for it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from modelpool.catalog.model import Pool, Route
from modelpool.protocols.tokens import estimate_tokens
from modelpool.upstream.providers import ProviderEndpoint


@dataclass(slots=True)
class Call:
    """One client call, whatever dialect it arrived in."""

    ingress: str  # "openai" | "anthropic" | "responses" | "gemini"
    body: dict[str, Any]
    stream: bool
    pool: Pool
    requested_model: str
    session_id: str | None = None
    purpose: str | None = None  # SPEC §3.6: passed straight through when set
    forced_route: str | None = None  # `x-modelpool-route`: that route only, no failover
    named_pool: str | None = None  # with a forced route: the pool the client named (it is billed there)
    effort: str | None = None
    locale: str = "en"  # from Accept-Language: the language of the inline switch notice
    has_images: bool = False  # SPEC §3.1 step 2
    has_tools: bool = False  # step 3
    prompt_cache: bool = True  # SPEC §3.11: breakpoints on a call translated onto a Messages route
    # SPEC §3.10: the known signers of the signed reasoning in the request (digest → route), the route of the
    # latest one (affinity), and the (route, digest) pairs this call's replies carried (for the book).
    signers: dict[str, str] = field(default_factory=dict, repr=False)
    signer: str | None = None
    signed: list[tuple[str, str]] = field(default_factory=list, repr=False)
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)  # the client's request headers
    # W3C trace context for the upstream request (tracing on: the current attempt's span), else empty.
    trace_headers: tuple[tuple[str, str], ...] = ()
    # The body's bytes as the client sent them (the server's calls): a native attempt that changes nothing
    # in the body sends these instead of encoding `body` again (SPEC §1.6, issue #21).
    raw: bytes = field(default=b"", repr=False)
    _est_tokens: int | None = field(default=None, repr=False)
    # Translation losses by target dialect (`routing.lossy.call_losses`), computed when first needed.
    _losses: dict[str, tuple[Any, ...]] | None = field(default=None, repr=False)

    @property
    def account_pool(self) -> str:
        """The pool the call counts under in the usage books (SPEC §14): the one the client named, also
        when `x-modelpool-route` forced one of its routes."""
        return self.named_pool or self.pool.id

    @property
    def est_tokens(self) -> int:
        """Step 3: the estimated conversation size. Computed on first read, because it walks the whole
        body and most calls never need it: only a pool with a known context window, an aggregator's
        ranking or a translated stream's usage read it."""
        if self._est_tokens is None:
            self._est_tokens = estimate_tokens(self.body, self.ingress)
        return self._est_tokens


@dataclass(slots=True)
class Candidate:
    route: Route
    endpoint: ProviderEndpoint
    reasons: list[str] = field(default_factory=list)  # why it stands where it stands
    # The route's time limits (SPEC §3.9, `catalog.timeouts.RouteTimeouts`), resolved once per runtime;
    # None: the client's global ones.
    timeouts: Any = None
    key: str = field(init=False)

    def __post_init__(self) -> None:
        self.key = self.route.key

    def with_reasons(self, *more: str) -> Candidate:
        """A copy with more reasons: the planner's base candidates are shared by every call of a runtime
        and never change, so a call's own reasons go to its copy."""
        return Candidate(self.route, self.endpoint, [*self.reasons, *more], self.timeouts)


class Notes(dict[str, list[str]]):
    """Reasons a plan adds after the strategy (operator pin, demotion, rest, sticky pin), by route key.
    Kept apart from the candidates and sparse: most calls add none, and most candidates fall beyond the
    `max_attempts` cap, where the plan reports their key only."""

    def add(self, key: str, why: str) -> None:
        self.setdefault(key, []).append(why)


@dataclass(slots=True)
class Plan:
    candidates: list[Candidate]
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (route key, why it is not a candidate)
    strategy: str = "priority"
    # The call's own reasons by route key (the strategy's, the planner's notes), made only when read: the
    # plan of nearly every call is never explained, and the texts cost more than the plan (issue #21).
    call_reasons: Callable[[], Mapping[str, list[str]]] | None = field(default=None, repr=False)

    def reasons(self, cand: Candidate) -> list[str]:
        """Why `cand` stands where it stands in this plan."""
        extra = self.call_reasons().get(cand.key, ()) if self.call_reasons is not None else ()
        return [*cand.reasons, *extra]

    def explain(self) -> dict[str, Any]:
        texts = self.call_reasons() if self.call_reasons is not None else {}
        return {
            "strategy": self.strategy,
            "candidates": [
                {"route": c.key, "why": [*c.reasons, *texts.get(c.key, ())]} for c in self.candidates
            ],
            "skipped": [{"route": k, "why": why} for k, why in self.skipped],
        }
