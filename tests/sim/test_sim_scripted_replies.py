"""Two scripted replies in every dialect the sim speaks, streamed and not: parallel calls of one function
(`SimModel.parallel_calls`, each call with its own id) and an empty answer (`output_tokens=0`, with or
without reasoning) — read back with the official SDKs, so the shapes are what real clients accept."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import orjson
import pytest

from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider

TOOL = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def fleet() -> Iterator[FleetThread]:
    models = [
        SimModel("par", parallel_calls=3),
        SimModel("thinks", reasoning_tokens=3, output_tokens=0),
        SimModel("mute", output_tokens=0),
    ]
    fast: dict[str, Any] = {"ttft": 0.001, "tps": 5000.0}
    spec = FleetSpec(
        [
            SimProvider("omni", dialects=("openai", "anthropic", "responses"), models=models, **fast),
            SimProvider("gem", kind="gemini", models=models, **fast),
        ]
    )
    with FleetThread(spec) as ft:
        yield ft


def chat(fleet: FleetThread) -> openai.OpenAI:
    return openai.OpenAI(base_url=fleet.base_url("omni"), api_key="x", max_retries=0)


def messages(fleet: FleetThread) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=fleet.root_url("omni"), api_key="x", max_retries=0)


@pytest.mark.parametrize("stream", [False, True])
def test_parallel_calls_in_each_dialect(fleet: FleetThread, stream: bool) -> None:
    ids: dict[str, list[str]] = {}
    oa = chat(fleet)
    if stream:
        chunks = list(oa.chat.completions.create(model="par", messages=HI, tools=[TOOL], stream=True))  # type: ignore[list-item,arg-type]
        ids["chat"] = [tc.id for c in chunks for tc in c.choices[0].delta.tool_calls or [] if tc.id]
    else:
        reply = oa.chat.completions.create(model="par", messages=HI, tools=[TOOL])  # type: ignore[list-item,arg-type]
        ids["chat"] = [tc.id for tc in reply.choices[0].message.tool_calls or []]
    tool = {"name": "lookup", "input_schema": {"type": "object"}}
    an = messages(fleet)
    if stream:
        with an.messages.stream(model="par", max_tokens=50, messages=HI, tools=[tool]) as s:  # type: ignore[arg-type,list-item]
            message = s.get_final_message()
    else:
        message = an.messages.create(model="par", max_tokens=50, messages=HI, tools=[tool])  # type: ignore[arg-type,list-item]
    ids["messages"] = [b.id for b in message.content if b.type == "tool_use"]
    assert all(b.input == {"source": "omni:par", "ok": True} for b in message.content if b.type == "tool_use")
    fn = {"type": "function", "name": "lookup", "parameters": {"type": "object"}}
    if stream:
        events = list(oa.responses.create(model="par", input="hi", tools=[fn], stream=True))  # type: ignore[list-item]
        output = next(e.response.output for e in events if e.type == "response.completed")
    else:
        output = oa.responses.create(model="par", input="hi", tools=[fn]).output  # type: ignore[list-item]
    ids["responses"] = [item.call_id for item in output if item.type == "function_call"]
    tools = [{"functionDeclarations": [{"name": "lookup"}]}]
    parts, _ = gemini_reply(fleet, "par", stream, tools=tools)
    ids["gemini"] = [p["functionCall"]["id"] for p in parts if "functionCall" in p]
    for dialect, found in ids.items():
        assert len(found) == 3 and len(set(found)) == 3, (dialect, found)


def gemini_reply(fleet: FleetThread, model: str, stream: bool, **extra: Any) -> tuple[list[Any], list[str]]:
    """The parts of a Gemini reply (every event's, when streamed) and its finish reasons."""
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], **extra}
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    resp = httpx.post(f"{fleet.root_url('gem')}/v1beta/models/{model}:{method}", json=body, timeout=10)
    objs = [orjson.loads(line[6:]) for line in resp.text.splitlines() if line.startswith("data: ")]
    candidates = [o["candidates"][0] for o in objs or [resp.json()]]
    parts = [p for c in candidates for p in c["content"]["parts"]]
    return parts, [c["finishReason"] for c in candidates if c.get("finishReason")]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("model", "thinks"), [("thinks", True), ("mute", False)])
def test_an_empty_answer_in_each_dialect(fleet: FleetThread, stream: bool, model: str, thinks: bool) -> None:
    """No answer text at all, in every dialect: a valid reply that ends normally (the Anthropic renderer
    used to fail on it with a 500)."""
    oa = chat(fleet)
    if stream:
        chunks = list(oa.chat.completions.create(model=model, messages=HI, stream=True))  # type: ignore[arg-type]
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        reasoning = "".join(
            (c.choices[0].delta.model_extra or {}).get("reasoning_content", "") for c in chunks if c.choices
        )
        finish = chunks[-1].choices[0].finish_reason
    else:
        reply = oa.chat.completions.create(model=model, messages=HI)  # type: ignore[arg-type]
        text = reply.choices[0].message.content or ""
        reasoning = (reply.choices[0].message.model_extra or {}).get("reasoning_content", "")
        finish = reply.choices[0].finish_reason
    assert (text, bool(reasoning), finish) == ("", thinks, "stop")
    an = messages(fleet)
    if stream:
        with an.messages.stream(model=model, max_tokens=50, messages=HI) as s:  # type: ignore[arg-type]
            message = s.get_final_message()
    else:
        message = an.messages.create(model=model, max_tokens=50, messages=HI)  # type: ignore[arg-type]
    assert [b.type for b in message.content] == (["thinking"] if thinks else [])
    assert message.stop_reason == "end_turn"
    if stream:
        events = list(oa.responses.create(model=model, input="hi", stream=True))
        response = next(e.response for e in events if e.type == "response.completed")
    else:
        response = oa.responses.create(model=model, input="hi")
    assert response.status == "completed" and response.output_text == ""
    parts, reasons = gemini_reply(fleet, model, stream)
    thought = "".join(p.get("text", "") for p in parts if p.get("thought"))
    answer = "".join(p.get("text", "") for p in parts if not p.get("thought"))
    assert (bool(thought), answer, reasons) == (thinks, "", ["STOP"])
