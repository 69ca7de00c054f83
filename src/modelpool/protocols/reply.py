"""The neutral non-stream reply: what `translate_body` reads an upstream body into and renders in the
client's dialect (each dialect's reader and writer fills or reads the same ordered blocks)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Reply:
    model: str = ""
    # ("thinking", text, signature | None) · ("redacted", data) · ("text", text) · ("refusal", text)
    # · ("tool", call_id, name, arguments JSON string)
    blocks: list[tuple[Any, ...]] = field(default_factory=list)
    finish_reason: str | None = None  # OpenAI vocabulary, when read from OpenAI
    stop_reason: str | None = None  # Anthropic vocabulary, when read from Anthropic
    stop_sequence: str | None = None
    usage: dict[str, int] | None = None
