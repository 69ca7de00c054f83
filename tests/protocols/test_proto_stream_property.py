"""Property: random streams survive a translation chain there and back (and into Responses) unchanged."""

from __future__ import annotations

import itertools
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st
from proto_helpers import FACTS, events_of, translate

text = st.text(st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=8)
ident = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
args_obj = st.dictionaries(ident, st.integers(-1000, 1000) | text | st.booleans(), max_size=3)


def _split(s: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(s) + 1) for c in cuts} | {0, len(s)})
    return [s[a:b] for a, b in itertools.pairwise(points) if s[a:b]]


def oa_chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    obj = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "u"}
    obj["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
    return b"data: " + orjson.dumps(obj) + b"\n\n"


@st.composite
def openai_stream(draw: Any) -> bytes:
    out = [oa_chunk({"role": "assistant", "content": ""})]
    for part in draw(st.lists(text, max_size=3)):
        out += [oa_chunk({"reasoning_content": p}) for p in _split(part, draw(st.lists(st.integers(0, 20))))]
    for part in draw(st.lists(text, max_size=3)):
        out += [oa_chunk({"content": p}) for p in _split(part, draw(st.lists(st.integers(0, 20))))]
    calls = draw(st.lists(st.tuples(ident, args_obj), max_size=3))
    for i, (name, args) in enumerate(calls):
        raw = orjson.dumps(args).decode()
        pieces = _split(raw, draw(st.lists(st.integers(0, 40))))
        first = {
            "index": i,
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        out.append(oa_chunk({"tool_calls": [first]}))
        out += [oa_chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]}) for p in pieces]
    out.append(oa_chunk({}, "tool_calls" if calls else draw(st.sampled_from(["stop", "length"]))))
    usage = {"prompt_tokens": draw(st.integers(0, 999)), "completion_tokens": draw(st.integers(0, 999))}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    out.append(b"data: " + orjson.dumps({"id": "c", "choices": [], "usage": usage}) + b"\n\n")
    return b"".join(out) + b"data: [DONE]\n\n"


def an_event(obj: dict[str, Any]) -> bytes:
    return b"event: " + obj["type"].encode() + b"\ndata: " + orjson.dumps(obj) + b"\n\n"


@st.composite
def anthropic_stream(draw: Any) -> bytes:
    message = {"id": "m", "type": "message", "role": "assistant", "model": "c", "content": []}
    message["usage"] = {"input_tokens": draw(st.integers(0, 999)), "output_tokens": 1}
    out = [an_event({"type": "message_start", "message": message})]
    kinds = draw(st.lists(st.sampled_from(["thinking", "text", "tool"]), max_size=5))
    kinds = sorted(kinds, key=["thinking", "text", "tool"].index)  # thinking → text → tools, as models do
    for index, kind in enumerate(kinds):
        if kind == "thinking":
            block = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": p}
                for p in _split(draw(text), draw(st.lists(st.integers(0, 9))))
            ]
            deltas.append({"type": "signature_delta", "signature": draw(ident)})
        elif kind == "text":
            block = {"type": "text", "text": ""}
            deltas = [
                {"type": "text_delta", "text": p}
                for p in _split(draw(text), draw(st.lists(st.integers(0, 9))))
            ]
        else:
            block = {"type": "tool_use", "id": f"toolu_{index}", "name": draw(ident), "input": {}}
            raw = orjson.dumps(draw(args_obj)).decode()
            deltas = [{"type": "input_json_delta", "partial_json": ""}]
            deltas += [
                {"type": "input_json_delta", "partial_json": p}
                for p in _split(raw, draw(st.lists(st.integers(0, 30))))
            ]
        out.append(an_event({"type": "content_block_start", "index": index, "content_block": block}))
        out += [an_event({"type": "content_block_delta", "index": index, "delta": d}) for d in deltas]
        if draw(st.booleans()):
            out.append(an_event({"type": "ping"}))
        out.append(an_event({"type": "content_block_stop", "index": index}))
    stop = "tool_use" if "tool" in kinds else draw(st.sampled_from(["end_turn", "max_tokens"]))
    usage = {"output_tokens": draw(st.integers(1, 999))}
    out.append(
        an_event(
            {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": usage}
        )
    )
    return b"".join(out) + an_event({"type": "message_stop"})


@settings(max_examples=80, deadline=None)
@given(openai_stream(), st.integers(0, 10**6))
def test_openai_stream_through_anthropic_and_back(data: bytes, seed: int) -> None:
    want = FACTS["openai"](data)
    mid, _ = translate(data, "openai", "anthropic", seed=seed)
    assert FACTS["anthropic"](mid).content() == want.content()
    back, _ = translate(mid, "anthropic", "openai", seed=seed + 1, include_usage=True)
    got = FACTS["openai"](back)
    assert got.content() == want.content() and got.stop == want.stop and got.usage == want.usage
    resp, _ = translate(data, "openai", "responses", seed=seed)
    assert FACTS["responses"](resp).content()[:3] == want.content()[:3]


@settings(max_examples=80, deadline=None)
@given(anthropic_stream(), st.integers(0, 10**6))
def test_anthropic_stream_through_openai_and_back(data: bytes, seed: int) -> None:
    want = FACTS["anthropic"](data)
    mid, _ = translate(data, "anthropic", "openai", seed=seed, include_usage=True)
    assert FACTS["openai"](mid).content() == want.content()
    back, _ = translate(mid, "openai", "anthropic", seed=seed + 1)
    got = FACTS["anthropic"](back)
    assert got.content() == want.content() and got.stop == want.stop and got.usage == want.usage
    # Signatures stay attached to their own thinking block.
    blocks = [orjson.loads(ev.data) for ev in events_of(back) if ev.event == "content_block_delta"]
    sig_indices = [b["index"] for b in blocks if b["delta"]["type"] == "signature_delta"]
    assert len(sig_indices) == len(set(sig_indices))
    resp, _ = translate(data, "anthropic", "responses", seed=seed)
    assert FACTS["responses"](resp).content() == want.content()
