"""Property-based round trips of requests: OpenAI → Anthropic → OpenAI and Anthropic → OpenAI → Anthropic.

Equality is semantic: the ordered sequence of (role, text / image / thinking+signature / tool call with
arguments as parsed JSON / tool result) and the request parameters both dialects can express.
"""

from __future__ import annotations

import itertools
import string
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from modelpool.protocols.translate_request import anthropic_to_openai, openai_to_anthropic

_B64 = string.ascii_letters + string.digits + "+/"
text = st.text(st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=12)
ident = st.text(string.ascii_letters, min_size=1, max_size=10)
json_scalar = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
json_value = st.recursive(
    json_scalar, lambda c: st.lists(c, max_size=3) | st.dictionaries(ident, c, max_size=3), max_leaves=6
)
json_object = st.dictionaries(ident, json_value, max_size=4)
image_url = st.one_of(
    st.builds(lambda b: f"data:image/png;base64,{b}", st.text(_B64, min_size=4, max_size=16)),
    st.builds(lambda p: f"https://img.example/{p}.jpg", ident),
)
signature = st.text(_B64, min_size=8, max_size=24)


# ---------------------------------------------------------------- OpenAI conversations


@st.composite
def openai_request(draw: Any) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    if draw(st.booleans()):
        messages.append({"role": draw(st.sampled_from(["system", "developer"])), "content": draw(text)})
    counter = 0
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.booleans()):
            messages.append({"role": "user", "content": draw(text)})
        else:
            parts = draw(
                st.lists(
                    st.one_of(
                        st.builds(lambda t: {"type": "text", "text": t}, text),
                        st.builds(lambda u: {"type": "image_url", "image_url": {"url": u}}, image_url),
                    ),
                    min_size=1,
                    max_size=3,
                )
            )
            messages.append({"role": "user", "content": parts})
        msg: dict[str, Any] = {"role": "assistant", "content": draw(st.none() | text)}
        blocks = draw(
            st.lists(
                st.builds(lambda t, s: {"type": "thinking", "thinking": t, "signature": s}, text, signature),
                max_size=2,
            )
        )
        if blocks:
            msg["thinking_blocks"] = blocks
            msg["reasoning_content"] = "".join(b["thinking"] for b in blocks)
        calls = []
        for _ in range(draw(st.integers(0 if msg["content"] else 1, 2))):
            counter += 1
            raw = draw(
                st.one_of(
                    json_object.map(lambda o: orjson.dumps(o).decode()), st.just("{not json"), st.just("")
                )
            )
            calls.append(
                {
                    "id": f"call_{counter}",
                    "type": "function",
                    "function": {"name": draw(ident), "arguments": raw},
                }
            )
        if calls:
            msg["tool_calls"] = calls
        messages.append(msg)
        for call in calls:
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": draw(text)})
    messages.append({"role": "user", "content": draw(text)})
    req: dict[str, Any] = {"model": "m", "messages": messages, "max_tokens": draw(st.integers(1, 10**5))}
    if draw(st.booleans()):
        names = draw(st.lists(ident, min_size=1, max_size=3, unique=True))
        req["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": n,
                    "description": f"does {n}",
                    "parameters": {"type": "object", "properties": {}},
                },
            }
            for n in names
        ]
        req["tool_choice"] = draw(
            st.sampled_from(
                ["auto", "required", "none", {"type": "function", "function": {"name": names[0]}}]
            )
        )
        if draw(st.booleans()) and req["tool_choice"] != "none":
            req["parallel_tool_calls"] = False
    if draw(st.booleans()):
        req["stop"] = draw(
            st.lists(st.text(string.ascii_lowercase, min_size=1, max_size=5), min_size=1, max_size=3)
        )
    if draw(st.booleans()):
        req["temperature"] = draw(st.floats(0, 1))
    if draw(st.booleans()):
        req["user"] = draw(ident)
    req["stream"] = draw(st.booleans())
    return req


def _args(raw: Any) -> Any:
    try:
        return orjson.loads(raw) if raw else {}
    except orjson.JSONDecodeError:
        return ("raw", raw)


def openai_semantics(req: dict[str, Any]) -> dict[str, Any]:
    system: list[str] = []
    seq: list[tuple[Any, ...]] = []
    for m in req["messages"]:
        role, content = m["role"], m.get("content")
        if role in ("system", "developer"):
            system.append(content)
            continue
        if role == "tool":
            seq.append(("tool_result", m["tool_call_id"], content))
            continue
        for b in m.get("thinking_blocks") or []:
            seq.append(("thinking", b["thinking"], b["signature"]))
        if isinstance(content, str) and content:
            seq.append((role, "text", content))
        for p in content if isinstance(content, list) else []:
            seq.append(
                (role, "text", p["text"]) if p["type"] == "text" else (role, "image", p["image_url"]["url"])
            )
        for c in m.get("tool_calls") or []:
            seq.append(("tool_call", c["id"], c["function"]["name"], _args(c["function"]["arguments"])))
    choice = req.get("tool_choice") if req.get("tools") else None
    params = {k: req.get(k) for k in ("max_tokens", "stop", "temperature", "user", "parallel_tool_calls")}
    tools = [
        (t["function"]["name"], t["function"].get("description"), t["function"]["parameters"])
        for t in req.get("tools") or []
    ]
    return {
        "system": "\n\n".join(system),
        "seq": seq,
        "tools": tools,
        "choice": choice,
        "params": params,
        "stream": bool(req.get("stream")),
    }


@settings(max_examples=100, deadline=None)
@given(openai_request())
def test_openai_anthropic_openai(req: dict[str, Any]) -> None:
    there = openai_to_anthropic(req)
    back = anthropic_to_openai(there)
    assert openai_semantics(back) == openai_semantics(req)
    # The middle is a valid Anthropic request: alternating roles, starting with user, max_tokens set.
    roles = [m["role"] for m in there["messages"]]
    assert all(a != b for a, b in itertools.pairwise(roles)) and roles[0] == "user"
    assert there["max_tokens"] == req["max_tokens"]


# ---------------------------------------------------------------- Anthropic conversations


@st.composite
def anthropic_request(draw: Any) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    pending: list[str] = []  # tool_use ids the next user turn must answer
    counter = 0
    for _ in range(draw(st.integers(1, 4))):
        user: list[dict[str, Any]] = []
        for tid in pending:
            content = draw(st.one_of(text, st.builds(lambda t: [{"type": "text", "text": t}], text)))
            result: dict[str, Any] = {"type": "tool_result", "tool_use_id": tid, "content": content}
            user.append(result)
        user += draw(
            st.lists(
                st.one_of(
                    st.builds(lambda t: {"type": "text", "text": t}, text),
                    st.builds(
                        lambda d: {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": d},
                        },
                        st.text(_B64, min_size=4, max_size=16),
                    ),
                    st.builds(
                        lambda u: {
                            "type": "image",
                            "source": {"type": "url", "url": f"https://x.example/{u}.png"},
                        },
                        ident,
                    ),
                ),
                min_size=0 if pending else 1,
                max_size=2,
            )
        )
        messages.append(
            {
                "role": "user",
                "content": user
                if len(user) != 1 or user[0]["type"] != "text" or draw(st.booleans())
                else user[0]["text"],
            }
        )
        blocks: list[dict[str, Any]] = []
        blocks += draw(
            st.lists(
                st.one_of(
                    st.builds(
                        lambda t, s: {"type": "thinking", "thinking": t, "signature": s}, text, signature
                    ),
                    st.builds(lambda d: {"type": "redacted_thinking", "data": d}, signature),
                ),
                max_size=2,
            )
        )
        if draw(st.booleans()):
            blocks.append({"type": "text", "text": draw(text)})
        pending = []
        for _ in range(draw(st.integers(0 if blocks and blocks[-1]["type"] == "text" else 1, 2))):
            counter += 1
            pending.append(f"toolu_{counter}")
            blocks.append(
                {"type": "tool_use", "id": pending[-1], "name": draw(ident), "input": draw(json_object)}
            )
        messages.append({"role": "assistant", "content": blocks})
    messages.append(
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": t, "content": "done"} for t in pending]
            or "go on",
        }
    )
    req: dict[str, Any] = {"model": "m", "max_tokens": draw(st.integers(1, 10**5)), "messages": messages}
    if draw(st.booleans()):
        req["system"] = draw(st.one_of(text, st.builds(lambda t: [{"type": "text", "text": t}], text)))
    if draw(st.booleans()):
        names = draw(st.lists(ident, min_size=1, max_size=3, unique=True))
        req["tools"] = [
            {"name": n, "description": "d", "input_schema": {"type": "object", "properties": {}}}
            for n in names
        ]
        choice = draw(
            st.sampled_from(
                [{"type": "auto"}, {"type": "any"}, {"type": "none"}, {"type": "tool", "name": names[0]}]
            )
        )
        if choice["type"] != "none" and draw(st.booleans()):
            choice["disable_parallel_tool_use"] = True
        req["tool_choice"] = choice
    if draw(st.booleans()):
        req["stop_sequences"] = draw(
            st.lists(st.text(string.ascii_lowercase, min_size=1, max_size=5), min_size=1, max_size=2)
        )
    if draw(st.booleans()):
        req["temperature"] = draw(st.floats(0, 1))
    if draw(st.booleans()):
        req["metadata"] = {"user_id": draw(ident)}
    return req


def _text_of(content: Any) -> str:
    return content if isinstance(content, str) else "\n".join(b["text"] for b in content)


def anthropic_semantics(req: dict[str, Any]) -> dict[str, Any]:
    seq: list[tuple[Any, ...]] = []
    for m in req["messages"]:
        content = m["content"]
        if isinstance(content, str):
            seq.append((m["role"], "text", content))
            continue
        for b in content:
            kind = b["type"]
            if kind == "text":
                seq.append((m["role"], "text", b["text"]))
            elif kind == "image":
                seq.append((m["role"], "image", b["source"]))
            elif kind == "thinking":
                seq.append(("thinking", b["thinking"], b["signature"]))
            elif kind == "redacted_thinking":
                seq.append(("redacted", b["data"]))
            elif kind == "tool_use":
                seq.append(("tool_use", b["id"], b["name"], b["input"]))
            elif kind == "tool_result":
                seq.append(("tool_result", b["tool_use_id"], _text_of(b["content"])))
    system = req.get("system")
    params = {k: req.get(k) for k in ("max_tokens", "stop_sequences", "temperature", "metadata")}
    return {
        "system": _text_of(system) if system else None,
        "seq": seq,
        "tools": [(t["name"], t.get("description"), t["input_schema"]) for t in req.get("tools") or []],
        "choice": req.get("tool_choice"),
        "params": params,
    }


@settings(max_examples=100, deadline=None)
@given(anthropic_request())
def test_anthropic_openai_anthropic(req: dict[str, Any]) -> None:
    there = anthropic_to_openai(req)
    back = openai_to_anthropic(there)
    assert anthropic_semantics(back) == anthropic_semantics(req)
    # The middle is valid chat: every tool message answers a tool call of the assistant turn before it.
    open_calls: set[str] = set()
    for m in there["messages"]:
        if m["role"] == "assistant":
            open_calls = {c["id"] for c in m.get("tool_calls") or []}
        elif m["role"] == "tool":
            assert m["tool_call_id"] in open_calls
        else:
            open_calls = set()
