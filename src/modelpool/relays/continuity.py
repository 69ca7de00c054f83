"""Handing one client stream between translated and native attempts (SPEC §1.6).

A translating attempt's encoder (`protocols.stream_encode`, `stream_responses`) lives for the whole call
and knows what it sent; a native attempt relays an upstream's own numbering. `ClientStream` is the
common record: `suspend_encoder` writes the encoder's position into it when a translated attempt ends,
`resume_encoder` puts a native attempt's position into the encoder before the next translated attempt.
"""

from __future__ import annotations

from typing import Any

from modelpool.protocols.responses import frame
from modelpool.protocols.stream_encode import AnthropicEncoder, Encoder
from modelpool.protocols.stream_responses import ResponsesEncoder
from modelpool.relays.client_stream import ClientStream


def resume_encoder(enc: Encoder, cs: ClientStream) -> None:
    """Before a translated attempt: continue from where a native attempt left the client's stream."""
    if not cs.last_native or not cs.preamble_sent:
        return
    cs.last_native = False
    enc.started = True
    if isinstance(enc, AnthropicEncoder):
        _resume_anthropic(enc, cs)
    elif isinstance(enc, ResponsesEncoder):
        _resume_responses(enc, cs)


def suspend_encoder(enc: Encoder, cs: ClientStream) -> None:
    """After a translated attempt: record what the encoder sent, for a native attempt to continue."""
    if not enc.started:
        return
    cs.preamble_sent = True
    if isinstance(enc, AnthropicEncoder):
        cs.message_id = enc.message_id
        cs.next_index = enc._index + 1
        cs.open_index = enc._index if enc._open is not None else None
    elif isinstance(enc, ResponsesEncoder):
        cs.response_id = enc.response_id
        cs.seq = enc._seq
        cs.items = list(enc.output)
        cs.next_index = len(enc.output)
        cs.open_item = None
        if enc._item is not None:
            item: dict[str, Any] = {k: v for k, v in enc._item.items() if not k.startswith("_")}
            cs.open_item = {**item, "status": "incomplete"}
            cs.next_index += 1


def _resume_anthropic(enc: AnthropicEncoder, cs: ClientStream) -> None:
    if cs.message_id:
        enc.message_id = cs.message_id
    enc._index = cs.next_index - 1
    enc._ib = str(enc._index).encode()
    # A block the native attempt left open is closed by the encoder's next block start (`_close`).
    enc._open = "thinking" if cs.open_index is not None else None
    if cs.open_index is not None:
        enc._ib = str(cs.open_index).encode()
    enc._break = True
    cs.open_index = None


def _resume_responses(enc: ResponsesEncoder, cs: ClientStream) -> None:
    if cs.response_id:
        enc.response_id = cs.response_id
    enc._seq = cs.seq
    enc._item = None
    enc.output = list(cs.items)
    if cs.open_item is not None:
        done = {
            "type": "response.output_item.done",
            "output_index": len(enc.output),
            "item": cs.open_item,
            "sequence_number": enc._seq,
        }
        enc._seq += 1
        enc.out.append(frame(b"response.output_item.done", done))
        enc.output.append(cs.open_item)
        cs.open_item = None
