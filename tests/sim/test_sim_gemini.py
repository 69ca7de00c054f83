"""The sim's Gemini API (`kind: gemini`, SPEC §10): generateContent, streamGenerateContent SSE, countTokens,
the model list and the OpenAI root at /v1beta/openai, Gemini-shaped errors, and the scripted agent task
answering Gemini CLI's `write_file` with a function call, then text once the result is back."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from modelpool.sim import AgentTask, FleetSpec, FleetThread, SimModel, SimProvider

TASK = AgentTask(path="hello.txt", content="hi there\n")
WRITE = {
    "name": "write_file",
    "parametersJsonSchema": {
        "type": "object",
        "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
    },
}


@pytest.fixture(scope="module")
def fleet() -> Iterator[FleetThread]:
    spec = FleetSpec(
        [
            SimProvider(
                "g",
                kind="gemini",
                api_key="gkey",
                models=[SimModel("m1", reasoning_tokens=2, output_tokens=3), SimModel("agent", agent=TASK)],
                ttft=0.001,
                tps=5000.0,
            )
        ]
    )
    with FleetThread(spec) as ft:
        yield ft


def url(fleet: FleetThread, path: str) -> str:
    return fleet.root_url("g") + "/v1beta" + path


KEY = {"x-goog-api-key": "gkey"}
HI = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}


def events(raw: bytes) -> list[dict[str, Any]]:
    assert b"\r\n\r\n" in raw  # Google's framing
    return [orjson.loads(f.removeprefix(b"data: ")) for f in raw.split(b"\r\n\r\n") if f.strip()]


def test_generate_and_stream(fleet: FleetThread) -> None:
    one = httpx.post(url(fleet, "/models/m1:generateContent"), json=HI, headers=KEY).json()
    parts = one["candidates"][0]["content"]["parts"]
    assert parts[0]["thought"] is True and parts[1]["text"].startswith("[g:m1]")
    assert one["candidates"][0]["finishReason"] == "STOP"
    assert (
        one["usageMetadata"]["thoughtsTokenCount"] == 2 and one["usageMetadata"]["candidatesTokenCount"] == 3
    )
    raw = httpx.post(url(fleet, "/models/m1:streamGenerateContent?alt=sse"), json=HI, headers=KEY).content
    evs = events(raw)
    assert [e["candidates"][0].get("finishReason") for e in evs] == [None] * 5 + ["STOP"]
    # As Gemini streams: every event says the prompt's size, only the last one the whole usage.
    assert "candidatesTokenCount" in evs[-1]["usageMetadata"]
    assert all(e["usageMetadata"] == {"promptTokenCount": 1, "totalTokenCount": 1} for e in evs[:-1])
    call = fleet.calls("g")[-1]
    assert call.dialect == "gemini" and call.stream and call.model == "m1" and call.query == "alt=sse"
    assert "x-goog-api-key" in call.secret_headers and "gkey" not in str(call.headers)


def test_count_tokens_models_and_the_openai_root(fleet: FleetThread) -> None:
    count = httpx.post(url(fleet, "/models/m1:countTokens"), json=HI, headers=KEY).json()
    assert count["totalTokens"] >= 1
    models = httpx.get(url(fleet, "/models"), headers=KEY).json()["models"]
    assert [m["name"] for m in models] == ["models/m1", "models/agent"]
    chat = httpx.post(
        url(fleet, "/openai/chat/completions"),
        json={"model": "m1", "messages": [{"role": "user", "content": "hi"}]},
        headers={"authorization": "Bearer gkey"},
    ).json()
    assert chat["choices"][0]["message"]["content"].startswith("[g:m1]")


def test_errors_are_gemini_shaped(fleet: FleetThread) -> None:
    bad_key = httpx.post(url(fleet, "/models/m1:generateContent"), json=HI, headers={"x-goog-api-key": "no"})
    assert bad_key.status_code == 401 and bad_key.json()["error"]["status"] == "UNAUTHENTICATED"
    missing = httpx.post(url(fleet, "/models/nope:generateContent"), json=HI, headers=KEY)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == 404
    empty = httpx.post(url(fleet, "/models/m1:generateContent"), json={"contents": []}, headers=KEY)
    assert empty.status_code == 400 and empty.json()["error"]["status"] == "INVALID_ARGUMENT"


def test_agent_writes_the_file_then_answers(fleet: FleetThread) -> None:
    ask = {
        "contents": [
            {"role": "user", "parts": [{"text": "I'm currently working in the directory: /tmp/w"}]},
            {"role": "user", "parts": [{"text": "create hello.txt"}]},
        ],
        "tools": [{"functionDeclarations": [WRITE]}],
    }
    evs = events(
        httpx.post(url(fleet, "/models/agent:streamGenerateContent?alt=sse"), json=ask, headers=KEY).content
    )
    calls = [
        p["functionCall"] for e in evs for p in e["candidates"][0]["content"]["parts"] if "functionCall" in p
    ]
    assert calls == [
        {
            "id": calls[0]["id"],
            "name": "write_file",
            "args": {"file_path": "/tmp/w/hello.txt", "content": TASK.content},
        }
    ]
    answered = {
        **ask,
        "contents": [
            *ask["contents"],
            {"role": "model", "parts": [{"functionCall": calls[0]}]},
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "id": calls[0]["id"],
                            "name": "write_file",
                            "response": {"output": "ok"},
                        }
                    }
                ],
            },
        ],
    }
    done = httpx.post(url(fleet, "/models/agent:generateContent"), json=answered, headers=KEY).json()
    assert done["candidates"][0]["content"]["parts"] == [{"text": TASK.done_text}]
