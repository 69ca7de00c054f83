"""Fastest-first order of an aggregator's inner providers (SPEC §6, the fastcel seed).

Three bands, each stable: measured providers by median throughput (highest first), then providers with
no data (null metrics: no recent traffic, or OpenRouter without a key), then the demoted ones — inactive
or deprecated, uptime below `min_uptime`, no tool support for a call with tools, context too small —
which keep the order they would have had. Demoted providers stay in the list: `order` is a preference,
and a slow or flaky provider is still a better last resort than an error.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from modelpool.aggregators.endpoints import EndpointStats

# Makers whose provider slug differs from the creator segment of their model ids. Both sides are
# normalized first (lower-case, punctuation dropped), so `z-ai`/`zai` and `x-ai`/`xai` need no entry.
_MAKER_ALIASES: dict[str, str] = {
    "zhipu": "zai",
    "zhipuai": "zai",
    "metallama": "meta",
    "mistralai": "mistral",
    "moonshotai": "moonshot",
    "qwen": "alibaba",  # Qwen models are served first-party by Alibaba Cloud
    "alibabacloud": "alibaba",
    "bytedanceseed": "bytedance",
    "minimaxai": "minimax",
}
_NON_ALNUM = re.compile(r"[^a-z0-9]+")


@lru_cache(maxsize=1024)
def _maker(name: str) -> str:
    key = _NON_ALNUM.sub("", name.lower())
    return _MAKER_ALIASES.get(key, key)


def is_first_party(model: str, slug: str) -> bool:
    """The model's maker serving it from its own API: `deepseek` for `deepseek/...`.

    OpenRouter slugs carry a variant (`deepseek/fp8`): the part before `/` is the provider.
    """
    if "/" not in model:
        return False
    creator = model.split("/", 1)[0]
    provider = slug.split("/", 1)[0]
    return bool(creator) and _maker(creator) == _maker(provider)


# Not frozen: a frozen dataclass pays object.__setattr__ per field, and rank() builds one entry per
# inner provider on every aggregator call. Treat entries as read-only all the same.
@dataclass(slots=True)
class RankEntry:
    slug: str
    name: str
    tps: float | None
    ttft_ms: float | None
    uptime_15m: float | None
    first_party: bool
    demoted: tuple[str, ...]  # why it was moved to the back; empty when it was not

    @property
    def has_data(self) -> bool:
        return self.tps is not None

    @property
    def reason(self) -> str:
        """One sentence: why it stands where it stands (built on demand: the hot path needs only slugs)."""
        if self.demoted:
            return "moved to the back: " + "; ".join(self.demoted)
        if self.tps is None:
            return "no recent throughput data: after the measured providers"
        return f"median {self.tps:g} tok/s"


@dataclass(frozen=True, slots=True)
class Ranking:
    model: str
    entries: tuple[RankEntry, ...] = field(default_factory=tuple)

    @property
    def order(self) -> list[str]:
        return [e.slug for e in self.entries]

    @property
    def best(self) -> RankEntry | None:
        """The provider a new session lands on: the head of the order."""
        return self.entries[0] if self.entries else None

    @property
    def best_tps(self) -> float | None:
        """Expected speed of the route (SPEC §3.4): its first provider's median tok/s, when measured.

        The head is the pick of a new conversation; if it has no data the route's speed is unknown,
        and we say so rather than borrow a slower provider's figure.
        """
        head = self.best
        return head.tps if head is not None else None

    @property
    def best_ttft_ms(self) -> float | None:
        head = self.best
        return head.ttft_ms if head is not None else None

    @property
    def table(self) -> list[dict[str, Any]]:
        """Rows for the ranking panel and `modelpool rank`: JSON-ready."""
        return [
            {
                "provider": e.slug,
                "name": e.name,
                "tps": e.tps,
                "ttft_ms": e.ttft_ms,
                "uptime_15m": e.uptime_15m,
                "first_party": e.first_party,
                "demoted": list(e.demoted),
                "notes": _notes(e),
                "reason": e.reason,
            }
            for e in self.entries
        ]


def _notes(e: RankEntry) -> str:
    notes = ["first-party"] if e.first_party else []
    if e.demoted:
        notes.append("demoted: " + "; ".join(e.demoted))
    elif not e.has_data:
        notes.append("no recent data")
    return ", ".join(notes)


def demotions(ep: EndpointStats, *, has_tools: bool, est_tokens: int, min_uptime: float) -> list[str]:
    """Why `ep` goes to the back of the order (empty: it does not)."""
    reasons: list[str] = []
    if not ep.status_active:
        reasons.append("status not active")
    if ep.deprecated:
        reasons.append("deprecated")
    if ep.uptime_15m is not None and ep.uptime_15m < min_uptime:
        reasons.append(f"uptime {_pct(ep.uptime_15m)} < {_pct(min_uptime)} over 15 min")
    if has_tools and not ep.tools:
        reasons.append("no tool support (the call has tools)")
    if est_tokens > 0 and ep.context_length is not None and ep.context_length < est_tokens:
        reasons.append(f"context {ep.context_length:,} < ~{est_tokens:,} tokens in the conversation")
    return reasons


def rank(
    stats: Sequence[EndpointStats],
    *,
    has_tools: bool = False,
    est_tokens: int = 0,
    min_uptime: float = 90.0,
    model: str = "",
) -> Ranking:
    # sorted() is stable: equal throughput keeps the aggregator's listing order, and the no-data band
    # keeps it entirely (no figure to sort by).
    measured = sorted((ep for ep in stats if ep.tps_p50 is not None), key=lambda ep: -(ep.tps_p50 or 0.0))
    no_data = [ep for ep in stats if ep.tps_p50 is None]
    kept: list[RankEntry] = []
    demoted: list[RankEntry] = []
    creator = _maker(model.split("/", 1)[0]) if "/" in model else None
    for ep in [*measured, *no_data]:
        why = demotions(ep, has_tools=has_tools, est_tokens=est_tokens, min_uptime=min_uptime)
        entry = RankEntry(
            slug=ep.slug,
            name=ep.name,
            tps=ep.tps_p50,
            ttft_ms=ep.ttft_p50_ms,
            uptime_15m=ep.uptime_15m,
            first_party=creator is not None and _maker(ep.slug.split("/", 1)[0]) == creator,
            demoted=tuple(why),
        )
        (demoted if why else kept).append(entry)
    return Ranking(model=model, entries=tuple(kept + demoted))


def _pct(value: float) -> str:
    return f"{value:g}%"
