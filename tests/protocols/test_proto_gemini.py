"""The Gemini dialect's pieces (protocols/gemini): ids, signatures, hosted tools, effort, usage, the stream
encoder and the non-stream reply."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from modelpool.protocols.effort import read_effort, write_effort
from modelpool.protocols.errors import ClientError
from modelpool.protocols.gemini import wire
from modelpool.protocols.loss import dropped_names, translation_losses
from modelpool.protocols.sse import SSEEvent, SSEParser
from modelpool.protocols.tokens import estimate_tokens
from modelpool.protocols.translate_any import translate_request_for
from modelpool.protocols.translate_body import translate_body
from modelpool.protocols.translate_stream import StreamTranslator


def body(*contents: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"model": "m", "stream": True, "contents": list(contents), **extra}


def user(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "parts": list(parts)}


def model(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "model", "parts": list(parts)}


def call(name: str, call_id: str | None = None, **args: Any) -> dict[str, Any]:
    fc: dict[str, Any] = {"name": name, "args": args}
    if call_id:
        fc["id"] = call_id
    return {"functionCall": fc, "thoughtSignature": "skip_thought_signature_validator"}


def answer(name: str, call_id: str | None = None) -> dict[str, Any]:
    fr: dict[str, Any] = {"name": name, "response": {"output": "done"}}
    if call_id:
        fr["id"] = call_id
    return {"functionResponse": fr}


def test_parallel_calls_of_one_function_keep_distinct_ids() -> None:
    """Without ids: each call gets its own from its place, and the responses answer them in order."""
    req = body(
        user({"text": "read both"}),
        model(call("read_file", path="a"), call("read_file", path="b")),
        user(answer("read_file"), answer("read_file")),
    )
    out = translate_request_for("gemini", req, "openai")
    ids = [tc["id"] for tc in out["messages"][1]["tool_calls"]]
    assert len(set(ids)) == 2
    assert [m["tool_call_id"] for m in out["messages"][2:]] == ids


def test_ids_are_kept_and_gemini_cli_rewrites_mapped_back() -> None:
    """`<name>__<id>` (how some Gemini CLI versions echo an id) is the route's `<id>` again."""
    req = body(
        user({"text": "go"}),
        model(call("write_file", "write_file__call_abc"), call("write_file", "call_def")),
        user(answer("write_file", "write_file__call_abc"), answer("write_file", "call_def")),
    )
    out = translate_request_for("gemini", req, "anthropic")
    blocks = out["messages"][1]["content"]
    assert [b["id"] for b in blocks if b["type"] == "tool_use"] == ["call_abc", "call_def"]
    results = out["messages"][2]["content"]
    assert [b["tool_use_id"] for b in results] == ["call_abc", "call_def"]


def test_signatures_dropped_by_name_and_hosted_tools_left_out() -> None:
    decl = {"name": "f", "parametersJsonSchema": {"type": "object"}}
    req = body(
        user({"text": "hi"}),
        model({"text": "thinking", "thought": True, "thoughtSignature": "c2ln"}, call("f", "c1")),
        user(answer("f", "c1")),
        tools=[{"functionDeclarations": [decl]}, {"googleSearch": {}}, {"codeExecution": {}}],
    )
    losses = translation_losses("gemini", req, "openai")
    names = dropped_names(losses)
    assert {"thoughtSignature", "googleSearch", "codeExecution"} <= set(names)
    # the hosted tools change the answer but are only offered (SPEC §1.6): left out by default, a 400 under
    # `refuse`; the signature changes nothing
    assert {lo.field for lo in losses if lo.changes_answer} == {"googleSearch", "codeExecution"}
    assert all(lo.offered for lo in losses if lo.changes_answer)
    out = translate_request_for("gemini", req, "openai")
    assert [t["function"]["name"] for t in out["tools"]] == ["f"]
    assert out["messages"][1]["reasoning_content"] == "thinking"
    assert "c2ln" not in orjson.dumps(out).decode()
    assert "skip_thought_signature_validator" not in orjson.dumps(out).decode()


def test_content_a_route_cannot_read_changes_the_answer() -> None:
    req = body(user({"inlineData": {"mimeType": "application/pdf", "data": "JVBE"}}))
    losses = translation_losses("gemini", req, "openai")
    assert [lo.field for lo in losses if lo.changes_answer] == ["contents[0].parts[0]"]
    image = body(user({"text": "what"}, {"inlineData": {"mimeType": "image/png", "data": "iVBO"}}))
    out = translate_request_for("gemini", image, "openai")
    assert out["messages"][0]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,iVBO"},
    }
    assert wire.has_images(image) and not translation_losses("gemini", image, "openai")


@pytest.mark.parametrize(
    ("thinking", "tier"),
    [
        ({"thinkingBudget": 8192, "includeThoughts": True}, "medium"),
        ({"thinkingBudget": 0}, "off"),
        ({"thinkingBudget": -1}, None),
        ({"thinkingLevel": "HIGH"}, "high"),
        ({"thinking_level": "low"}, "low"),
        ({"includeThoughts": True}, None),
    ],
)
def test_thinking_config_reads_as_effort(thinking: dict[str, Any], tier: str | None) -> None:
    req = body(user({"text": "x"}), generationConfig={"thinkingConfig": thinking})
    assert read_effort("gemini", req) == tier


@pytest.mark.parametrize("tier", ["off", "minimal", "low", "medium", "high", "max"])
def test_effort_written_back_reads_the_same(tier: str) -> None:
    for thinking in ({"thinkingBudget": 100, "includeThoughts": True}, {"thinkingLevel": "LOW"}):
        req = body(user({"text": "x"}), generationConfig={"temperature": 1, "thinkingConfig": thinking})
        out = write_effort("gemini", req, tier)
        assert out["generationConfig"]["temperature"] == 1
        got = read_effort("gemini", out)
        assert got == tier or ("thinkingLevel" in thinking and tier == "max" and got == "high")


def test_size_estimate_counts_no_framing_for_a_missing_system_prompt() -> None:
    """4 tokens of framing per content, and none for a systemInstruction that is not there."""
    one = {"contents": [user({"text": "abcd" * 10})]}
    assert estimate_tokens(one, "gemini") == 10 + 4
    system = {**one, "systemInstruction": {"parts": [{"text": "abcd" * 5}]}}
    assert estimate_tokens(system, "gemini") == 15 + 8
    assert estimate_tokens({**one, "system_instruction": system["systemInstruction"]}, "gemini") == 15 + 8


def test_usage_both_ways() -> None:
    meta = {
        "promptTokenCount": 100,
        "candidatesTokenCount": 20,
        "thoughtsTokenCount": 30,
        "cachedContentTokenCount": 60,
        "totalTokenCount": 150,
    }
    flat = wire.usage_from_gemini(meta)
    assert flat == {
        "prompt_tokens": 100,
        "completion_tokens": 50,
        "total_tokens": 150,
        "cached_tokens": 60,
        "cache_creation_tokens": 0,
        "reasoning_tokens": 30,
    }
    assert wire.usage_to_gemini(flat) == meta


def chunks(*deltas: dict[str, Any], finish: str = "stop") -> list[SSEEvent]:
    raw = b""
    for d in deltas:
        raw += (
            b"data: " + orjson.dumps({"choices": [{"index": 0, "delta": d, "finish_reason": None}]}) + b"\n\n"
        )
    raw += (
        b"data: " + orjson.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}) + b"\n\n"
    )
    raw += b'data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7}}\n\ndata: [DONE]\n\n'
    return SSEParser().feed(raw)


def decode(raw: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(ev.data) for ev in SSEParser().feed(raw)]


def test_stream_from_chat_ends_as_gemini_cli_requires() -> None:
    t = StreamTranslator("gemini", "openai", model="pool")
    out = t.feed_all(chunks({"reasoning_content": "hmm"}, {"content": "Hel"}, {"content": "lo"}))
    t.set_metadata({"route": "chat/m"})
    events = decode(out + t.finish())
    parts = [p for e in events for p in e["candidates"][0]["content"]["parts"]]
    assert parts[0] == {"text": "hmm", "thought": True}
    assert "".join(p["text"] for p in parts if not p.get("thought")) == "Hello"
    last = events[-1]
    assert last["candidates"][0]["finishReason"] == "STOP" and last["modelpool"] == {"route": "chat/m"}
    assert last["usageMetadata"] == {"promptTokenCount": 5, "candidatesTokenCount": 7, "totalTokenCount": 12}
    assert t.committed


@pytest.mark.parametrize(
    ("deltas", "finish", "reason", "note"),
    [
        ([{"reasoning_content": "hmm"}], "length", "MAX_TOKENS", "reached its output token limit"),
        ([{"content": " \n"}], "stop", "STOP", "returned an empty answer"),
        ([{"reasoning_content": "hmm"}, {"content": "  "}], "stop", "STOP", "its reasoning but no answer"),
        ([], "content_filter", "SAFETY", "stopped by the upstream's content filter"),
    ],
)
def test_no_answer_text_is_said_in_modelpools_name(
    deltas: list[dict[str, Any]], finish: str, reason: str, note: str
) -> None:
    """Gemini CLI trims the answer text: blank text is no answer either. Streamed and not, the same note."""
    t = StreamTranslator("gemini", "openai", model="pool")
    events = decode(t.feed_all(chunks(*deltas, finish=finish)) + t.finish())
    last = events[-1]["candidates"][0]
    assert last["finishReason"] == reason and note in last["content"]["parts"][0]["text"]
    message: dict[str, Any] = {"role": "assistant", "content": "".join(d.get("content", "") for d in deltas)}
    if any("reasoning_content" in d for d in deltas):
        message["reasoning_content"] = "hmm"
    reply = {"choices": [{"message": message, "finish_reason": finish}], "model": "m"}
    parts = translate_body(reply, "openai", "gemini", model="pool")["candidates"][0]["content"]["parts"]
    assert note in parts[-1]["text"] and not parts[-1].get("thought")


def test_stream_tool_calls_go_out_whole_with_their_ids() -> None:
    t = StreamTranslator("gemini", "openai", model="pool")
    calls = [
        {
            "tool_calls": [
                {"index": 0, "id": "call_1", "function": {"name": "write_file", "arguments": '{"a"'}}
            ]
        },
        {"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]},
        {"tool_calls": [{"index": 1, "id": "call_2", "function": {"name": "write_file", "arguments": "{}"}}]},
    ]
    events = decode(t.feed_all(chunks(*calls, finish="tool_calls")) + t.finish())
    fcs = [
        p["functionCall"]
        for e in events
        for p in e["candidates"][0]["content"]["parts"]
        if "functionCall" in p
    ]
    assert fcs == [
        {"id": "call_1", "name": "write_file", "args": {"a": 1}},
        {"id": "call_2", "name": "write_file", "args": {}},
    ]
    assert events[-1]["candidates"][0]["finishReason"] == "STOP"


def test_non_stream_reply_from_anthropic() -> None:
    reply = {
        "type": "message",
        "model": "claude",
        "content": [
            {"type": "thinking", "thinking": "plan", "signature": "sig"},
            {"type": "text", "text": "ok"},
            {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"x": 1}},
        ],
        "stop_reason": "max_tokens",
        "usage": {"input_tokens": 3, "output_tokens": 4, "cache_read_input_tokens": 2},
    }
    out = translate_body(reply, "anthropic", "gemini", model="pool", meta={"route": "a/m"})
    cand = out["candidates"][0]
    assert cand["content"]["parts"] == [
        {"text": "plan", "thought": True},
        {"text": "ok"},
        {"functionCall": {"id": "toolu_1", "name": "f", "args": {"x": 1}}},
    ]
    assert cand["finishReason"] == "MAX_TOKENS" and out["modelpool"] == {"route": "a/m"}
    assert (
        out["usageMetadata"]["promptTokenCount"] == 5 and out["usageMetadata"]["cachedContentTokenCount"] == 2
    )


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b"[]",
        b'{"contents": []}',
        b'{"contents": [{"parts": "x"}]}',
        b'{"contents": [{"role": "bot", "parts": []}]}',
    ],
)
def test_bad_bodies_are_400(raw: bytes) -> None:
    with pytest.raises(ClientError) as err:
        wire.parse_request(raw, "m", False)
    assert err.value.status == 400
    assert orjson.loads(wire.client_error_body(err.value))["error"]["status"] == "INVALID_ARGUMENT"


def gemini_events(*objs: dict[str, Any]) -> list[SSEEvent]:
    return SSEParser().feed(b"".join(b"data: " + orjson.dumps(o) + b"\r\n\r\n" for o in objs))


def test_a_gemini_upstream_stream_for_an_anthropic_client() -> None:
    t = StreamTranslator("anthropic", "gemini", model="pool")
    parts = [
        {"text": "plan", "thought": True},
        {"functionCall": {"id": "c9", "name": "f", "args": {"x": 1}}, "thoughtSignature": "c2ln"},
    ]
    final = {
        "candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 2, "thoughtsTokenCount": 1},
    }
    out = t.feed_all(gemini_events({"candidates": [{"content": {"role": "model", "parts": parts}}]}, final))
    assert t.upstream_done and t.dropped == ["thoughtSignature"]
    out += t.finish()
    evs = [orjson.loads(ev.data) for ev in SSEParser().feed(out)]
    blocks = [e["content_block"] for e in evs if e["type"] == "content_block_start"]
    assert blocks[0]["type"] == "thinking" and blocks[1] == {
        "type": "tool_use",
        "id": "c9",
        "name": "f",
        "input": {},
    }
    assert '{"x":1}' in [e["delta"].get("partial_json") for e in evs if e["type"] == "content_block_delta"]
    delta = next(e for e in evs if e["type"] == "message_delta")
    assert delta["delta"]["stop_reason"] == "tool_use" and delta["usage"]["output_tokens"] == 3


def test_a_gemini_upstream_error_event_keeps_its_status() -> None:
    t = StreamTranslator("openai", "gemini", model="pool")
    err = {"error": {"code": 429, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED"}}
    with pytest.raises(Exception) as raised:
        t.feed_all(gemini_events(err))
    assert getattr(raised.value, "status", None) == 429 and "exhausted" in str(raised.value)


def test_chat_to_gemini_request() -> None:
    chat = {
        "model": "m",
        "messages": [
            {"role": "system", "content": "be brief"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}},
                ],
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": '{"ok": true}'},
            {"role": "user", "content": "thanks"},
        ],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
        "tool_choice": {"type": "function", "function": {"name": "f"}},
        "max_tokens": 50,
        "stop": "END",
        "user": "u1",
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "r", "schema": {"type": "object"}},
        },
    }
    out = translate_request_for("openai", chat, "gemini")
    assert out["systemInstruction"] == {"parts": [{"text": "be brief"}]}
    assert out["contents"] == [
        {
            "role": "user",
            "parts": [{"text": "look"}, {"inlineData": {"mimeType": "image/png", "data": "iVBO"}}],
        },
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {"id": "c1", "name": "f", "args": {"a": 1}},
                    "thoughtSignature": "skip_thought_signature_validator",
                }
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"id": "c1", "name": "f", "response": {"ok": True}}},
                {"text": "thanks"},
            ],
        },
    ]
    assert out["toolConfig"] == {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["f"]}}
    assert out["generationConfig"] == {
        "maxOutputTokens": 50,
        "stopSequences": ["END"],
        "responseMimeType": "application/json",
        "responseJsonSchema": {"type": "object"},
    }
    assert "model" not in out
    assert dropped_names(translation_losses("openai", chat, "gemini")) == ["user", "name"]  # schema name
