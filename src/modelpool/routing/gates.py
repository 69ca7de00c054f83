"""The gates after the strategy (SPEC §3.1 step 6, §3.8, §3.10): they move routes within the order the
strategy made, never drop one. Plain functions of what they read, so the planner stays the sequence."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from modelpool.health.quota import QuotaBook
from modelpool.routing.call import Call, Candidate, Notes

QUOTA_NOTE = "demoted: quota low"


def quota_gate(
    book: QuotaBook | None, call: Call, cands: Sequence[Candidate], notes: Notes, now: float
) -> Sequence[Candidate]:
    """SPEC §3.8: a route whose announced quota leaves no room for this call goes to the back until its
    reset (stable; not a rest). When every route is short, the order stays: one of them may have
    reset already without saying so."""
    if book is None or not book.routes or call.purpose:
        return cands
    low = book.short(cands, now, call)
    if not low or len(low) == len(cands):
        return cands
    front = [c for c in cands if c.key not in low]
    back = [c for c in cands if c.key in low]
    for c in back:
        notes.add(c.key, f"demoted: {low[c.key]}")  # "demoted: quota low: …" (QUOTA_NOTE)
    return front + back


def signer_first(
    signer: str,
    cands: Sequence[Candidate],
    notes: Notes,
    is_resting: Callable[[str, float], bool],
    now: float,
) -> Sequence[Candidate]:
    """SPEC §3.10: the route that signed the conversation's latest reasoning goes first while it is a
    healthy candidate (elsewhere that reasoning is left out of the history)."""
    for i, c in enumerate(cands):
        if c.key == signer:
            if i == 0 or is_resting(c.key, now):
                return cands
            notes.add(c.key, "signer: this conversation's signed reasoning came from here")
            return [c, *cands[:i], *cands[i + 1 :]]
    return cands


def health_gate(
    cands: Sequence[Candidate],
    notes: Notes,
    is_resting: Callable[[str, float], bool],
    any_resting: Callable[[float], bool] | None,
    now: float,
) -> Sequence[Candidate]:
    """Resting routes go behind the others; if all rest, all are tried in strategy order."""
    if any_resting is not None and not any_resting(now):
        return cands  # nothing rests anywhere: no per-route pass at all
    if not any(is_resting(c.key, now) for c in cands):
        return cands  # the common case: one pass, nothing rebuilt
    healthy: list[Candidate] = []
    resting: list[Candidate] = []
    for c in cands:
        (resting if is_resting(c.key, now) else healthy).append(c)
    why = "resting: moved behind healthy routes" if healthy else "all resting: tried anyway"
    for c in resting:
        notes.add(c.key, why)
    return healthy + resting
