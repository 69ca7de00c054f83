"""What a translation leaves out, field by field (SPEC §1.6: translation never loses silently).

`translation_losses(ingress, body, target)` walks a client body the way the request translators do
(`translate_responses`, `request_from_anthropic`, `translate_request`) and names every field, tool,
item or content block that has no equivalent in the translated body. Each `Loss` says whether losing it
would change the answer (`changes_answer`): server-side tools, another provider's encrypted reasoning,
server-tool history, citations the route cannot produce, state held by another server, and anything the
translator refuses outright (a content type the target cannot take). Everything else — sampling knobs,
cache hints, metadata, context management, signatures a route cannot verify, unknown fields — is
harmless and only reported (`x-modelpool-dropped`). The property test in tests/protocols holds the two in
step: whatever the translator does not carry, this module names.

`translation_target(ingress, endpoint)` is the one rule for which dialect a route is spoken to;
`reply_drops(obj, upstream, client)` names what a non-stream reply carries that the client's dialect
cannot express (the stream decoders record the same in `StreamEnd.dropped`).

Runs only for a call whose pool has a route that must translate, once per (call, target): the planner
memoises it on the call (`routing.lossy.call_losses`). Not on the per-chunk path.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from modelpool.protocols.effort import read_effort
from modelpool.protocols.gemini.losses import (
    chat_to_gemini_losses,
    gemini_losses,
    gemini_reply_drops,
    through_chat_losses,
)
from modelpool.protocols.loss_messages import anthropic_losses, chat_losses
from modelpool.protocols.loss_responses import responses_losses
from modelpool.protocols.loss_walk import Loss, Walk

__all__ = [
    "Loss",
    "blocking",
    "demotion_reason",
    "dropped_header",
    "dropped_names",
    "refusal_message",
    "reply_drops",
    "translation_losses",
    "translation_target",
]


class _Speaks(Protocol):
    def speaks(self, dialect: str) -> bool: ...


# Which dialect a translating route is spoken to, by client dialect, in order of preference.
_TARGETS = {
    "responses": ("openai", "anthropic", "gemini"),
    "anthropic": ("openai", "gemini"),
    "openai": ("anthropic", "gemini"),
    "gemini": ("openai", "anthropic"),
}
_TARGET_NAME = {"openai": "chat", "anthropic": "anthropic", "responses": "responses", "gemini": "gemini"}


def translation_target(ingress: str, endpoint: _Speaks) -> str | None:
    """The dialect an attempt on `endpoint` speaks for a client in `ingress`: the client's own when the
    route speaks it (native), else the first translation the route can take; None when it can take none."""
    if endpoint.speaks(ingress):
        return ingress
    for target in _TARGETS.get(ingress, ()):
        if endpoint.speaks(target):
            return target
    return None


def translation_losses(ingress: str, body: dict[str, Any], target: str) -> list[Loss]:
    """Every part of `body` (a checked client request in `ingress`) the translation to `target` drops."""
    if ingress == target:
        return []
    w = Walk()
    try:
        if ingress == "responses" and target in ("openai", "anthropic"):
            responses_losses(w, body, target)
        elif ingress == "anthropic" and target == "openai":
            anthropic_losses(w, body)
        elif ingress == "openai" and target == "anthropic":
            chat_losses(w, body)
        elif ingress == "gemini" and target in ("openai", "anthropic"):
            gemini_losses(w, body, target)  # through the chat body (to_chat.py)
        elif target == "gemini" and ingress in ("openai", "anthropic", "responses"):
            _to_gemini_losses(w, ingress, body)
        else:
            raise ValueError(f"no translation from {ingress} to {target}")
        if target == "anthropic":
            _thinking_knobs(w, ingress, body)
    except (AttributeError, TypeError, KeyError, IndexError):
        # A shape the translator would refuse as a whole (it raises a 400 for it): nothing is carried.
        w.lose("body", True, why="malformed for translation")
    return w.losses


def _to_gemini_losses(w: Walk, ingress: str, body: dict[str, Any]) -> None:
    """Through the chat body (`gemini/from_chat.py`): a chat client's losses walked on its body; for a
    Messages or Responses client, what reaching chat loses, then the fields of its own body that reach the
    chat body but not a Gemini request (`through_chat_losses`)."""
    if ingress == "openai":
        chat_to_gemini_losses(w, body)
        return
    w.losses.extend(translation_losses(ingress, body, "openai"))
    through_chat_losses(w, ingress, body)


def _thinking_knobs(w: Walk, ingress: str, body: dict[str, Any]) -> None:
    """Anthropic's extended thinking rejects a modified temperature and a top_p below 0.95: when the call
    asks for reasoning, `effort.write_effort` leaves them out (reported even where the route's nearest
    effort turns thinking off: harmless either way)."""
    effort = read_effort(ingress, body)
    if effort is None or effort == "off":
        return
    if ingress == "gemini":
        config = body.get("generationConfig") or body.get("generation_config") or {}
        if isinstance(config, dict):
            if isinstance(config.get("temperature"), int | float):
                w.lose("generationConfig.temperature", False, "temperature", why="extended thinking")
            top_p = config.get("topP", config.get("top_p"))
            if isinstance(top_p, int | float) and top_p < 0.95:
                w.lose("generationConfig.topP", False, "topP", why="extended thinking")
        return
    if isinstance(body.get("temperature"), int | float):
        w.lose("temperature", False, why="extended thinking")
    top_p = body.get("top_p")
    if isinstance(top_p, int | float) and top_p < 0.95:
        w.lose("top_p", False, why="extended thinking")


def blocking(losses: Iterable[Loss]) -> list[Loss]:
    """The losses that would change the answer."""
    return [loss for loss in losses if loss.changes_answer]


def _names(losses: Iterable[Loss]) -> list[str]:
    return list(dict.fromkeys(loss.field for loss in losses))


def dropped_names(losses: Iterable[Loss]) -> list[str]:
    """Short names of every loss, changes_answer or not, in body order, once each: a nested field by its
    own key (`cache_control`, `signature`), a tool, item or block by its name or path."""
    out: dict[str, None] = {}
    for loss in losses:
        last = loss.field.rsplit(".", 1)[-1]
        out[last if "[" not in last else loss.field] = None
    return list(out)


def dropped_header(losses: Iterable[Loss], reply: Iterable[str] = ()) -> str:
    """`x-modelpool-dropped` (and metadata `dropped`, as a list): what the request lost, then what the
    reply carried that the client's dialect cannot express (`reply_drops`, `StreamTranslator.dropped`)."""
    return ", ".join(dict.fromkeys([*dropped_names(losses), *reply]))


def demotion_reason(losses: Iterable[Loss], target: str) -> str | None:
    """The planner's reason to move a route to the back, or None when nothing that matters is lost."""
    names = _names(blocking(losses))
    if not names:
        return None
    return f"demoted: would drop {', '.join(names)} when translating to {_TARGET_NAME.get(target, target)}"


def refusal_message(losses: Iterable[Loss], target: str, mode: str = "refuse") -> str | None:
    """The 400 message of an attempt refused under `pool.lossy_translation` (`mode`), or None: `refuse`
    refuses any loss that changes the answer, `tools` (the default) all but the hosted tools the client
    only offers (those are left out and named, SPEC §1.6), `allow` none."""
    if mode == "allow":
        return None
    lost = [loss for loss in blocking(losses) if mode == "refuse" or not loss.offered]
    names = _names(lost)
    if not names:
        return None
    why = "; ".join(dict.fromkeys(loss.why for loss in lost if loss.why))
    return (
        f"this route must translate the request to {_TARGET_NAME.get(target, target)}, which cannot carry "
        f"{', '.join(names)}" + (f" ({why})" if why else "") + "; use a route that speaks the request's "
        "API, or set pool.lossy_translation: allow to send it without them"
    )


# ---------------------------------------------------------------- replies


_ANTH_REPLY_BLOCKS = ("text", "thinking", "redacted_thinking", "tool_use")


def reply_drops(obj: Any, upstream: str, client: str) -> list[str]:
    """What a non-stream upstream reply carries that the client's dialect (after translation) cannot
    express: server-tool blocks and citations from Anthropic, annotations and audio from chat, a thought
    signature and code execution from Gemini."""
    if upstream == client or not isinstance(obj, dict):
        return []
    if upstream == "gemini":
        return gemini_reply_drops(obj)
    out: list[str] = []
    if upstream == "anthropic":
        for b in obj.get("content") or []:
            kind = b.get("type") if isinstance(b, dict) else None
            if kind not in _ANTH_REPLY_BLOCKS:
                out.append(str(kind))
            elif kind == "text" and b.get("citations"):
                out.append("citations")
    else:
        choices = obj.get("choices") or [{}]
        msg = (choices[0] or {}).get("message") or {} if isinstance(choices[0], dict) else {}
        for key in ("annotations", "audio"):
            if msg.get(key):
                out.append(key)
        if len(choices) > 1:
            out.append("choices[1:]")
    return list(dict.fromkeys(out))
