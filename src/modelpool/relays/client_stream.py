"""What the client has already seen of one streamed call, shared by every attempt's relay (SPEC §1.6).

A walk may be native on one route and translated on the next. Before the commit point an attempt may
have sent reasoning (an Anthropic `message_start` and thinking blocks, a Responses `response.created` and
reasoning items), so the next attempt — whichever relay it uses — must continue that one stream: no second
preamble, block indices / output indices / sequence numbers going on from where the last attempt stopped,
and a block the failed attempt left open closed first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class ClientStream:
    """Per call. Relays read it when an attempt starts and write it when an attempt ends."""

    __slots__ = (
        "committed",
        "items",
        "last_native",
        "message_id",
        "next_index",
        "on_complete",
        "open_index",
        "open_item",
        "preamble_sent",
        "response_id",
        "seq",
        "started",
    )

    def __init__(self) -> None:
        self.started = False  # response headers sent
        self.committed = False  # content sent: the walk can no longer move
        self.preamble_sent = False  # message_start / response.created reached the client
        self.next_index = 0  # Anthropic: next content block index; Responses: next output_index
        self.open_index: int | None = None  # Anthropic: a block left open by a failed attempt
        self.open_item: dict[str, Any] | None = None  # Responses: an item left open (added, not done)
        self.seq = 0  # Responses: next sequence_number
        self.message_id: str | None = None  # the id the client's message_start / response.created gave
        self.response_id: str | None = None
        self.items: list[dict[str, Any]] = []  # Responses: items finished by earlier attempts
        self.last_native = False  # the last attempt was native: a translator must pick up from here
        # Called once the reply is whole, just before its terminator is written: from then on the call is
        # done whatever the client does (an SDK that hangs up right after `[DONE]` is no cancelled call).
        self.on_complete: Callable[[], None] | None = None

    def complete(self) -> None:
        if self.on_complete is not None:
            self.on_complete()
            self.on_complete = None

    @property
    def continuing(self) -> bool:
        """An earlier attempt already sent the preamble: this attempt continues its stream."""
        return self.preamble_sent
