"""The one entry point for a request crossing dialects: what a translating relay sends upstream.

`loss.translation_losses(ingress, body, target)` describes exactly what `translate_request_for` leaves
out (the property test in tests/protocols checks the pair), so a relay should call this rather than the
individual translators.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from modelpool.protocols.gemini.from_chat import openai_to_gemini
from modelpool.protocols.gemini.to_chat import gemini_to_openai
from modelpool.protocols.translate_request import (
    anthropic_to_openai,
    drop_unsigned_thinking,
    openai_to_anthropic,
)
from modelpool.protocols.translate_responses import responses_to_anthropic, responses_to_openai

TRANSLATE: dict[tuple[str, str], Callable[[dict[str, Any]], dict[str, Any]]] = {
    ("openai", "anthropic"): openai_to_anthropic,
    # A chat route cannot verify Anthropic signatures; some reject unknown message fields.
    ("anthropic", "openai"): lambda body: anthropic_to_openai(body, keep_signatures=False),
    ("responses", "openai"): responses_to_openai,
    ("responses", "anthropic"): responses_to_anthropic,
    ("gemini", "openai"): gemini_to_openai,
    # Gemini on a Messages route: through the chat body (one walk of the Gemini body for both).
    ("gemini", "anthropic"): lambda body: openai_to_anthropic(gemini_to_openai(body)),
    # A route that speaks only the Gemini API: through the chat body too.
    ("openai", "gemini"): openai_to_gemini,
    ("anthropic", "gemini"): lambda body: openai_to_gemini(anthropic_to_openai(body, keep_signatures=False)),
    ("responses", "gemini"): lambda body: openai_to_gemini(responses_to_openai(body)),
}


def translate_request_for(ingress: str, body: dict[str, Any], target: str) -> dict[str, Any]:
    """The client's `body` in the `target` dialect (a copy when they are the same: native attempts send
    the body as it came). Raises `ClientError` (400) for what the target cannot take at all."""
    if ingress == target:
        return dict(body)
    out = TRANSLATE[(ingress, target)](body)
    if target == "anthropic":
        # Reasoning another (non-Anthropic) route produced carries no signature; Anthropic rejects it.
        out = drop_unsigned_thinking(out)
    return out
