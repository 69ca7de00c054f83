"""What a route that must translate would lose for a call (SPEC §1.6, §3.1 step 3).

The planner asks only for calls whose pool has a route that does not speak the call's dialect (a
per-runtime memo says so), and each (call, target dialect) is computed once: at most two walks of the
body per call (chat and Anthropic), cached on the call for the relay, which refuses or reports them.
"""

from __future__ import annotations

from typing import Any

from modelpool.protocols.loss import (
    Loss,
    demotion_reason,
    dropped_names,
    refusal_message,
    translation_losses,
    translation_target,
)
from modelpool.routing.call import Call, Candidate


def call_losses(call: Call, target: str) -> tuple[Loss, ...]:
    """`translation_losses` of the call's body into `target`, memoised on the call."""
    memo = call._losses
    if memo is None:
        memo = call._losses = {}
    losses = memo.get(target)
    if losses is None:
        losses = memo[target] = tuple(translation_losses(call.ingress, call.body, target))
    return losses


def lossy_demotion(call: Call, cand: Candidate) -> str | None:
    """Why `cand` goes to the back because its translation would change the answer, or None."""
    if cand.endpoint.speaks(call.ingress):
        return None
    target = translation_target(call.ingress, cand.endpoint)
    if target is None:
        return f"demoted: speaks none of the dialects a {call.ingress} call can be translated to"
    return demotion_reason(call_losses(call, target), target)


def translation_check(
    call: Call, target: str, lossy_translation: str, body: dict[str, Any] | None = None
) -> tuple[str | None, list[str]]:
    """For one attempt translated to `target`: (the 400 message when the attempt must be refused — a loss
    that changes the answer, other than an offered hosted tool unless `pool.lossy_translation: refuse`,
    and none under `allow` — else None; the names for
    `x-modelpool-dropped` / metadata `dropped`). Native attempts (`target == call.ingress`): (None, []).
    `body`: the client's body as this route gets it, when it differs from the call's (another route's
    signed reasoning left out first, SPEC §3.10)."""
    if target == call.ingress:
        return None, []
    losses = (
        call_losses(call, target) if body is None else tuple(translation_losses(call.ingress, body, target))
    )
    message = refusal_message(losses, target, lossy_translation)
    if message is not None:
        return message, []
    return None, dropped_names(losses)
