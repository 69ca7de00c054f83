"""The positions a Responses stream event gives, for upstreams that leave them out (llama.cpp's server).

The Responses API numbers every stream event (`sequence_number`, from 0, strictly increasing) and places
each item event in the response: `output_index` is the position of its output item in `response.output`,
`content_index` the position of its part in that item's `content`. The `openai` SDK's stream helper
(`responses.stream()`) indexes its snapshot with them. llama-server sends none of the three; its item
events name their item only by `item_id` (or `item.id`), and it may close an earlier item after a later
one opened (its reasoning item is done at the end). `EventIndices` completes the two positions of one
upstream attempt's events, in arrival order, where they are missing (a position the upstream gave is
kept and remembered); the relay numbers the events.
"""

from __future__ import annotations

from typing import Any

_ITEM_EVENTS = frozenset({"response.output_item.added", "response.output_item.done"})
# Events of one content part (the Responses API gives each a `content_index`).
CONTENT_EVENTS = frozenset(
    {
        "response.content_part.added",
        "response.content_part.done",
        "response.output_text.delta",
        "response.output_text.done",
        "response.output_text.annotation.added",
        "response.refusal.delta",
        "response.refusal.done",
        "response.reasoning_text.delta",
        "response.reasoning_text.done",
    }
)
_LIFECYCLE = frozenset(
    {
        "response.created",
        "response.in_progress",
        "response.queued",
        "response.completed",
        "response.incomplete",
        "response.failed",
        "error",
    }
)


def incomplete(kind: str, obj: dict[str, Any]) -> bool:
    """Whether an upstream event lacks a number or position the Responses API gives it."""
    if "sequence_number" not in obj:
        return True
    if kind in _LIFECYCLE:
        return False
    if "output_index" not in obj and (kind in _ITEM_EVENTS or "item_id" in obj):
        return True
    return kind in CONTENT_EVENTS and "content_index" not in obj


class EventIndices:
    """`output_index` / `content_index` of one upstream attempt's events, completed where missing."""

    __slots__ = ("_by_id", "_last", "_next", "_parts")

    def __init__(self, open_items: dict[int, dict[str, Any]] | None = None, next_index: int = 0) -> None:
        # Items seen before the completing began (their events carried positions): still addressable.
        self._by_id: dict[str, int] = {}
        for index, item in (open_items or {}).items():
            if isinstance(item.get("id"), str):
                self._by_id[item["id"]] = index
        self._next = next_index  # the position the next new item takes
        self._last = next_index - 1  # the item added last (an event naming no known item belongs to it)
        self._parts: dict[int, int] = {}  # output_index → content parts added to it

    def fill(self, kind: str, obj: dict[str, Any]) -> None:
        if kind in _LIFECYCLE:
            return
        if kind in _ITEM_EVENTS:
            item = obj.get("item")
            item_id = item.get("id") if isinstance(item, dict) else None
            index = self._position(obj, item_id, item_event=True)
        elif "item_id" in obj or "output_index" in obj:
            index = self._position(obj, obj.get("item_id"), item_event=False)
        else:
            return
        if kind in CONTENT_EVENTS:
            parts = self._parts.get(index, 0)
            given = obj.get("content_index")
            if kind == "response.content_part.added":
                part = given if isinstance(given, int) else parts
                self._parts[index] = max(parts, part + 1)
            elif not isinstance(given, int):
                part = max(parts - 1, 0)  # the item's latest part (llama's reasoning text: its only one)
            else:
                return
            obj["content_index"] = part

    def _position(self, obj: dict[str, Any], item_id: Any, item_event: bool) -> int:
        given = obj.get("output_index")
        if isinstance(given, int):
            index = given
        else:
            known = self._by_id.get(item_id) if isinstance(item_id, str) else None
            if known is not None:
                index = known
            elif item_event or self._last < 0:
                index = self._next  # a new item (or one done without being added): the next position
            else:
                index = self._last
            obj["output_index"] = index
        if isinstance(item_id, str):
            self._by_id.setdefault(item_id, index)
        if index >= self._next:
            self._next = index + 1
            self._last = index
        return index
