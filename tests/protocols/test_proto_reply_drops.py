"""The reply direction of "never lose silently": whatever an upstream reply carries reaches the client in its
dialect or is named — by `loss.reply_drops` for a body, and identically by `StreamTranslator.dropped` for
the same reply streamed. Generated Anthropic and chat replies with sentinel texts and the blocks a route
may add (server-tool blocks, citations, annotations, audio)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from loss_bodies import token
from proto_helpers import translate
from test_proto_loss_property import TOKEN, unique_tokens

from modelpool.protocols.loss import reply_drops
from modelpool.protocols.translate_body import translate_body

SERVER_BLOCKS = [
    "server_tool_use",
    "web_search_tool_result",
    "web_fetch_tool_result",
    "code_execution_tool_result",
]


@st.composite
def anthropic_reply(draw: st.DrawFn) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["text", "thinking", "redacted_thinking", "tool_use", *SERVER_BLOCKS]))
        if kind == "text":
            b: dict[str, Any] = {"type": "text", "text": draw(token)}
            if draw(st.booleans()):
                b["citations"] = [
                    {"type": "web_search_result_location", "url": draw(token), "cited_text": "c"}
                ]
        elif kind == "thinking":
            b = {"type": "thinking", "thinking": draw(token), "signature": draw(token)}
        elif kind == "redacted_thinking":
            b = {"type": "redacted_thinking", "data": draw(token)}
        elif kind == "tool_use":
            b = {"type": "tool_use", "id": draw(token), "name": draw(token), "input": {"a": draw(token)}}
        elif kind == "server_tool_use":
            b = {"type": kind, "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}}
        else:
            b = {"type": kind, "tool_use_id": "srvtoolu_1", "content": []}
        blocks.append(b)
    usage = {"input_tokens": 3, "output_tokens": 4}
    return {"id": "m", "type": "message", "role": "assistant", "model": "m", "content": blocks,
            "stop_reason": "end_turn", "usage": usage}  # fmt: skip


@st.composite
def chat_reply(draw: st.DrawFn) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": draw(token)}
    if draw(st.booleans()):
        msg["reasoning_content"] = draw(token)
    if draw(st.booleans()):
        call = {"id": draw(token), "type": "function", "function": {"name": draw(token), "arguments": "{}"}}
        msg["tool_calls"] = [call]
    if draw(st.booleans()):
        msg["annotations"] = [{"type": "url_citation", "url_citation": {"url": draw(token)}}]
    if draw(st.booleans()):
        msg["audio"] = {"id": "a", "data": "AAAA", "transcript": "t"}
    choice = {"index": 0, "message": msg, "finish_reason": "stop"}
    return {"id": "c", "object": "chat.completion", "model": "m", "choices": [choice]}


def _carried_kinds(obj: dict[str, Any], upstream: str) -> list[tuple[str, Any]]:
    """(kind, value) of everything a client dialect can express, with its sentinel texts."""
    if upstream == "anthropic":
        return [
            (b["type"], b)
            for b in obj["content"]
            if b["type"] in ("text", "thinking", "redacted_thinking", "tool_use")
        ]
    msg = obj["choices"][0]["message"]
    return [(k, msg[k]) for k in ("content", "reasoning_content", "tool_calls") if k in msg]


def _anthropic_stream(obj: dict[str, Any]) -> bytes:
    """The same reply as a Messages event stream (whole blocks at start, text/citations as deltas)."""
    start = {**obj, "content": [], "stop_reason": None}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for i, b in enumerate(obj["content"]):
        if b["type"] == "text":
            events.append(
                {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}
            )
            events.append(
                {
                    "type": "content_block_delta",
                    "index": i,
                    "delta": {"type": "text_delta", "text": b["text"]},
                }
            )
            for c in b.get("citations") or []:
                delta = {"type": "citations_delta", "citation": c}
                events.append({"type": "content_block_delta", "index": i, "delta": delta})
        elif b["type"] == "tool_use":
            events.append({"type": "content_block_start", "index": i, "content_block": {**b, "input": {}}})
            delta = {"type": "input_json_delta", "partial_json": orjson.dumps(b["input"]).decode()}
            events.append({"type": "content_block_delta", "index": i, "delta": delta})
        else:
            events.append({"type": "content_block_start", "index": i, "content_block": b})
        events.append({"type": "content_block_stop", "index": i})
    events += [
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 4}},
        {"type": "message_stop"},
    ]
    return b"".join(b"event: " + e["type"].encode() + b"\ndata: " + orjson.dumps(e) + b"\n\n" for e in events)


def _chat_stream(obj: dict[str, Any]) -> bytes:
    msg = obj["choices"][0]["message"]
    head = {"id": "c", "object": "chat.completion.chunk", "model": "m", "created": 1}
    delta = {k: v for k, v in msg.items() if k != "tool_calls"}
    if "tool_calls" in msg:
        delta["tool_calls"] = [{**tc, "index": 0} for tc in msg["tool_calls"]]
    chunks = [{**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}]
    chunks.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return b"".join(b"data: " + orjson.dumps(c) + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


CASES = [
    ("anthropic", "openai"),
    ("anthropic", "responses"),
    ("openai", "anthropic"),
    ("openai", "responses"),
]


@pytest.mark.parametrize(("upstream", "client"), CASES)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_reply_reaches_the_client_or_is_named(upstream: str, client: str, data: st.DataObject) -> None:
    obj = unique_tokens(data.draw(anthropic_reply() if upstream == "anthropic" else chat_reply()))
    drops = reply_drops(obj, upstream, client)
    out = orjson.dumps(translate_body(obj, upstream, client, model="p")).decode()
    for kind, value in _carried_kinds(obj, upstream):
        for tok in TOKEN.findall(orjson.dumps(value).decode()):
            if kind == "text" and client == "openai" and tok in orjson.dumps(value.get("citations")).decode():
                continue  # a citation's own fields: named as "citations"
            if kind == "text" and tok not in value.get("text", ""):
                continue
            assert tok in out, f"{upstream}→{client}: {kind} ({tok}) lost silently"
    if upstream == "anthropic":
        lost = [b["type"] for b in obj["content"] if b["type"] in SERVER_BLOCKS]
        if any(b.get("citations") for b in obj["content"]):
            lost.append("citations")
    else:
        lost = [k for k in ("annotations", "audio") if k in obj["choices"][0]["message"]]
    assert set(drops) == set(lost)
    # The same reply streamed names the same things.
    stream = _anthropic_stream(obj) if upstream == "anthropic" else _chat_stream(obj)
    _, t = translate(stream, upstream, client)
    assert sorted(t.dropped) == sorted(drops)
