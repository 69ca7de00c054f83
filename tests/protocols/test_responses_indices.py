"""The positions `EventIndices` gives events that came without them, in the shapes llama.cpp's server sends
(tools/server/server-task.cpp, b11434): a reasoning item it opens with no content part and closes only at
the end, after the message that followed it; a message with one part; function calls."""

from __future__ import annotations

from typing import Any

from modelpool.protocols.responses_indices import EventIndices, incomplete


def ev(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, **fields}


def llama_stream() -> list[dict[str, Any]]:
    rs, msg, fc = {"id": "rs_1", "type": "reasoning"}, {"id": "msg_1", "type": "message"}, "fc_1"
    return [
        ev("response.created", response={"id": "resp_1"}),
        ev("response.in_progress", response={"id": "resp_1"}),
        ev("response.output_item.added", item={**rs, "content": []}),
        ev("response.reasoning_text.delta", item_id="rs_1", delta="hm"),
        ev("response.output_item.added", item={**msg, "content": []}),
        ev("response.content_part.added", item_id="msg_1", part={"type": "output_text", "text": ""}),
        ev("response.output_text.delta", item_id="msg_1", delta="Hi"),
        ev("response.output_item.added", item={"id": fc, "type": "function_call", "name": "f"}),
        ev("response.function_call_arguments.delta", item_id=fc, delta="{}"),
        ev("response.output_item.done", item={**rs, "content": [{"type": "reasoning_text", "text": "hm"}]}),
        ev("response.output_text.done", item_id="msg_1", text="Hi"),
        ev("response.content_part.done", item_id="msg_1", part={"type": "output_text", "text": "Hi"}),
        ev("response.output_item.done", item={**msg, "content": [{"type": "output_text", "text": "Hi"}]}),
        ev("response.output_item.done", item={"id": fc, "type": "function_call", "arguments": "{}"}),
        ev("response.completed", response={"id": "resp_1", "output": []}),
    ]


def test_llamas_events_get_the_positions_the_api_defines() -> None:
    events = llama_stream()
    assert all(incomplete(e["type"], e) for e in events)  # not one carries a sequence_number
    indices = EventIndices()
    for e in events:
        indices.fill(e["type"], e)
    got = [
        (e["type"].removeprefix("response."), e.get("output_index"), e.get("content_index")) for e in events
    ]
    assert got == [
        ("created", None, None),
        ("in_progress", None, None),
        ("output_item.added", 0, None),
        ("reasoning_text.delta", 0, 0),  # llama adds no part to its reasoning item: its text is part 0
        ("output_item.added", 1, None),
        ("content_part.added", 1, 0),
        ("output_text.delta", 1, 0),
        ("output_item.added", 2, None),
        ("function_call_arguments.delta", 2, None),
        ("output_item.done", 0, None),  # closed late: still the reasoning item's place
        ("output_text.done", 1, 0),
        ("content_part.done", 1, 0),
        ("output_item.done", 1, None),
        ("output_item.done", 2, None),
        ("completed", None, None),
    ]


def test_positions_the_upstream_gave_are_kept_and_followed() -> None:
    """Completing may start late (an upstream that numbers its events but leaves content_index out): the
    items it already placed keep their places and a second part of an item is part 1."""
    indices = EventIndices({3: {"id": "msg_9", "type": "message"}}, next_index=4)
    first = ev("response.content_part.added", item_id="msg_9", output_index=3, sequence_number=5, part={})
    assert incomplete(first["type"], first)
    indices.fill(first["type"], first)
    delta = ev("response.output_text.delta", item_id="msg_9", sequence_number=6, delta="a")
    indices.fill(delta["type"], delta)
    second = ev("response.content_part.added", item_id="msg_9", sequence_number=7, part={})
    indices.fill(second["type"], second)
    new = ev("response.output_item.added", sequence_number=8, item={"id": "fc_9", "type": "function_call"})
    indices.fill(new["type"], new)
    assert (first["content_index"], delta["output_index"], delta["content_index"]) == (0, 3, 0)
    assert (second["output_index"], second["content_index"], new["output_index"]) == (3, 1, 4)


def test_a_conformant_event_is_complete() -> None:
    assert not incomplete("response.created", {"type": "response.created", "sequence_number": 0})
    delta = {"item_id": "m", "output_index": 0, "content_index": 0, "sequence_number": 4, "delta": "x"}
    assert not incomplete("response.output_text.delta", delta)
    assert incomplete("response.output_text.delta", {k: v for k, v in delta.items() if k != "content_index"})
    args = {"item_id": "f", "sequence_number": 2, "delta": "{"}
    assert incomplete("response.function_call_arguments.delta", args)  # no output_index
    assert not incomplete("response.function_call_arguments.delta", {**args, "output_index": 1})
