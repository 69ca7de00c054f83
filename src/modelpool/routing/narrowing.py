"""Capability narrowing and demotions (SPEC §3.1 steps 2–3).

Narrowing removes candidates: a call carrying an image keeps only the routes that declare image input
(unknown counts as text-only); when none does, every route is kept and the upstream degrades the image
rather than the call being refused. Demotions keep a route but send it to the back: no declared tool
support for a call with tools, a context window smaller than the conversation, or a route that must
translate the call and would lose something that changes the answer (`lossy`, SPEC §1.6).
"""

from __future__ import annotations

from collections.abc import Sequence

from modelpool.routing.call import Call, Candidate, Notes
from modelpool.routing.lossy import lossy_demotion


def narrow_for_images(
    call: Call, cands: Sequence[Candidate], skipped: list[tuple[str, str]]
) -> Sequence[Candidate]:
    """The candidates of an image call, as copies that say why (the base candidates are shared)."""
    if not call.has_images:
        return cands
    capable = [c for c in cands if c.route.capabilities.accepts_images]
    if not capable:
        why = "no route declares image input: tried anyway (the image may be degraded)"
        return [c.with_reasons(why) for c in cands]
    for c in cands:
        if not c.route.capabilities.accepts_images:
            skipped.append((c.key, "image call: route does not declare image input"))
    return [c.with_reasons("accepts images") for c in capable]


def demotion(call: Call, cand: Candidate, translating: bool = False) -> str | None:
    """Why this candidate goes to the back for this call, or None. `translating`: some route of the pool
    does not speak the call's dialect (else no route is asked what translation would lose)."""
    caps = cand.route.capabilities
    if call.has_tools and caps.tools is False:
        return "demoted: route declares no tool support and the call has tools"
    if call.est_tokens and caps.context_window is not None and caps.context_window < call.est_tokens:
        return (
            f"demoted: context window {caps.context_window} < ~{call.est_tokens} tokens in the conversation"
        )
    if translating:
        return lossy_demotion(call, cand)
    return None


def demote(
    call: Call, ordered: Sequence[Candidate], notes: Notes, translating: bool = False
) -> Sequence[Candidate]:
    """Stable partition: demoted candidates keep their relative order behind the others."""
    smallest = call.pool.capabilities.context_window  # the minimum over the pool's routes
    if not translating and not call.has_tools and (smallest is None or call.est_tokens <= smallest):
        return ordered  # nothing to demote: skip the per-route pass on the hot path
    front: list[Candidate] = []
    back: list[Candidate] = []
    for c in ordered:
        why = demotion(call, c, translating)
        if why is None:
            front.append(c)
        else:
            notes.add(c.key, why)
            back.append(c)
    return front + back
