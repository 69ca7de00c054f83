"""The OpenAI-compatible provider, driven by the official openai SDK."""

from __future__ import annotations

import json

import httpx
import openai
import pytest
from openai import OpenAI

from modelpool.sim import FleetThread, expected_reasoning, expected_text, expected_tool_arguments

USER = [{"role": "user", "content": "hello there"}]
TOOLS = [
    {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}
]


def client(fleet: FleetThread, pid: str = "alpha", key: str = "x") -> OpenAI:
    return OpenAI(base_url=fleet.base_url(pid), api_key=key, max_retries=0, timeout=10)


def test_non_stream_text_and_usage(fleet: FleetThread) -> None:
    r = client(fleet).chat.completions.create(model="m1", messages=USER)
    assert (
        r.choices[0].message.content
        == expected_text("alpha", "m1", 6)
        == "[alpha:m1] tok0 tok1 tok2 tok3 tok4 tok5"
    )
    assert r.choices[0].finish_reason == "stop"
    assert r.model == "m1"
    assert r.usage is not None and r.usage.completion_tokens == 6
    assert r.usage.total_tokens == r.usage.prompt_tokens + 6


def test_stream_chunks_follow_the_wire_format(fleet: FleetThread) -> None:
    chunks = list(
        client(fleet).chat.completions.create(
            model="m1", messages=USER, stream=True, stream_options={"include_usage": True}
        )
    )
    first, *middle, finish, usage_chunk = chunks
    assert first.choices[0].delta.role == "assistant" and first.choices[0].delta.content == ""
    assert [c.choices[0].delta.content for c in middle] == ["[alpha:m1] tok0"] + [
        f" tok{i}" for i in range(1, 6)
    ]
    assert finish.choices[0].finish_reason == "stop"
    assert usage_chunk.choices == [] and usage_chunk.usage is not None
    assert usage_chunk.usage.completion_tokens == 6
    assert len({c.id for c in chunks}) == 1 and len({c.created for c in chunks}) == 1
    assert all(c.model == "m1" for c in chunks)


def test_stream_without_include_usage_has_no_usage_chunk(fleet: FleetThread) -> None:
    chunks = list(client(fleet).chat.completions.create(model="m1", messages=USER, stream=True))
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert all(c.usage is None for c in chunks)


def test_raw_stream_ends_with_done(fleet: FleetThread) -> None:
    body = {"model": "m1", "messages": USER, "stream": True}
    raw = httpx.post(fleet.base_url("alpha") + "/chat/completions", json=body).text
    assert raw.endswith("data: [DONE]\n\n")
    assert raw.count("data: ") == 1 + 6 + 1 + 1  # role, tokens, finish, [DONE]


def test_reasoning_content_deltas_come_first(fleet: FleetThread) -> None:
    chunks = list(client(fleet).chat.completions.create(model="reasoner", messages=USER, stream=True))
    reasoning = "".join((c.choices[0].delta.model_extra or {}).get("reasoning_content") or "" for c in chunks)
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert reasoning == expected_reasoning("alpha", "reasoner", 4)
    assert text == expected_text("alpha", "reasoner", 5)
    kinds = [
        ("r" if (c.choices[0].delta.model_extra or {}).get("reasoning_content") else "c")
        for c in chunks[1:-1]
    ]
    assert kinds == ["r"] * 4 + ["c"] * 5


def test_reasoning_on_request_and_off_switch(fleet: FleetThread) -> None:
    c = client(fleet)
    r = c.chat.completions.create(model="m1", messages=USER, reasoning_effort="high")
    assert (
        (r.choices[0].message.model_extra or {}).get("reasoning_content", "").startswith("[alpha:m1] think0")
    )
    assert r.usage is not None and r.usage.completion_tokens_details is not None
    assert r.usage.completion_tokens_details.reasoning_tokens == 8
    off = c.chat.completions.create(
        model="reasoner", messages=USER, extra_body={"thinking": {"type": "disabled"}}
    )
    assert "reasoning_content" not in (off.choices[0].message.model_extra or {})


def test_tool_call_stream_assembles(fleet: FleetThread) -> None:
    stream = client(fleet).chat.completions.create(model="m1", messages=USER, tools=TOOLS, stream=True)
    calls: dict[int, dict[str, str]] = {}
    finish = None
    for chunk in stream:
        choice = chunk.choices[0]
        finish = choice.finish_reason or finish
        for tc in choice.delta.tool_calls or []:
            slot = calls.setdefault(tc.index, {"id": "", "name": "", "args": ""})
            slot["id"] += tc.id or ""
            slot["name"] += (tc.function.name or "") if tc.function else ""
            slot["args"] += (tc.function.arguments or "") if tc.function else ""
    assert finish == "tool_calls"
    assert list(calls) == [0] and calls[0]["name"] == "lookup" and calls[0]["id"].startswith("call_")
    assert calls[0]["args"] == expected_tool_arguments("alpha", "m1")
    assert json.loads(calls[0]["args"]) == {"source": "alpha:m1", "ok": True}


def test_tool_result_turn_gets_text(fleet: FleetThread) -> None:
    messages = [
        *USER,
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "42"},
    ]  # fmt: skip
    r = client(fleet).chat.completions.create(model="m1", messages=messages, tools=TOOLS)
    assert r.choices[0].finish_reason == "stop"
    assert r.choices[0].message.content == expected_text("alpha", "m1", 6)


def test_non_stream_tool_call(fleet: FleetThread) -> None:
    r = client(fleet).chat.completions.create(model="m1", messages=USER, tools=TOOLS)
    call = r.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert r.choices[0].finish_reason == "tool_calls"
    assert call.function.name == "lookup"  # type: ignore[union-attr]
    assert call.function.arguments == expected_tool_arguments("alpha", "m1")  # type: ignore[union-attr]


def test_max_tokens_caps_with_length(fleet: FleetThread) -> None:
    r = client(fleet).chat.completions.create(model="m1", messages=USER, max_tokens=2)
    assert r.choices[0].message.content == expected_text("alpha", "m1", 2)
    assert r.choices[0].finish_reason == "length"


def test_models_list_has_declared_type(fleet: FleetThread) -> None:
    models = {m.id: m for m in client(fleet).models.list()}
    assert set(models) == {"m1", "reasoner", "plain", "vision", "embed-1"}
    assert (models["embed-1"].model_extra or {})["type"] == "embedding"
    assert (models["m1"].model_extra or {})["type"] == "language"


def test_unknown_model_is_404(fleet: FleetThread) -> None:
    with pytest.raises(openai.NotFoundError):
        client(fleet).chat.completions.create(model="nope", messages=USER)


def test_api_key_is_enforced(fleet: FleetThread) -> None:
    with pytest.raises(openai.AuthenticationError):
        client(fleet, "keyed", key="wrong").chat.completions.create(model="m1", messages=USER)
    r = client(fleet, "keyed", key="sk-sim-secret").chat.completions.create(model="m1", messages=USER)
    assert r.choices[0].message.content == expected_text("keyed", "m1", 2)
    assert [c.key_ok for c in fleet.calls("keyed")] == [False, True]
    ok = httpx.post(
        fleet.base_url("keyed") + "/chat/completions",
        json={"model": "m1", "messages": USER},
        headers={"x-api-key": "sk-sim-secret"},
    )
    assert ok.status_code == 200


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"tools": TOOLS}, "does not support tools"),
        ({"reasoning_effort": "max"}, "does not support reasoning_effort"),
        ({"messages": [{"role": "user", "content": "x" * 400}]}, "maximum context length"),
    ],
)
def test_capability_refusals(fleet: FleetThread, kwargs: dict, needle: str) -> None:
    args = {"model": "plain", "messages": USER, **kwargs}
    with pytest.raises(openai.BadRequestError) as exc:
        client(fleet).chat.completions.create(**args)
    assert needle in exc.value.message


def test_images_need_an_image_model(fleet: FleetThread) -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    messages = [{"role": "user", "content": [{"type": "text", "text": "what is it"}, image]}]
    with pytest.raises(openai.BadRequestError, match="image input"):
        client(fleet).chat.completions.create(model="m1", messages=messages)
    r = client(fleet).chat.completions.create(model="vision", messages=messages)
    assert r.choices[0].message.content == expected_text("alpha", "vision", 3)


def test_paths_work_with_and_without_v1(fleet: FleetThread) -> None:
    body = {"model": "m1", "messages": USER}
    for url in (
        fleet.root_url("alpha") + "/chat/completions",
        fleet.root_url("alpha") + "/v1/chat/completions",
    ):
        assert httpx.post(url, json=body).json()["choices"][0]["message"]["content"].startswith("[alpha:m1]")


def test_bad_json_is_400_in_openai_shape(fleet: FleetThread) -> None:
    r = httpx.post(fleet.base_url("alpha") + "/chat/completions", content=b"{nope")
    assert r.status_code == 400
    assert set(r.json()["error"]) >= {"message", "type", "code"}


def test_calls_are_recorded(fleet: FleetThread) -> None:
    c = client(fleet)
    c.chat.completions.create(model="m1", messages=USER, extra_headers={"x-session-id": "s-1"})
    c.chat.completions.create(model="m1", messages=USER, stream=True).close()
    calls = fleet.calls("alpha")
    assert [(r.model, r.stream) for r in calls] == [("m1", False), ("m1", True)]
    assert calls[0].headers["x-session-id"] == "s-1"
    assert calls[0].body is not None and calls[0].body["messages"] == USER
    assert calls[0].outcome == "ok" and calls[0].content_tokens == 6
    assert "authorization" not in calls[0].headers
