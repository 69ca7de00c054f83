"""A translated Gemini reply with no function call always has answer text (issue #27 audit, gap 1).

Gemini CLI takes a stream without a function call whose non-thought text is empty (trimmed) for a broken
one and sends the request again, with a nudge, up to four times. An upstream that answered with its
reasoning only, or with nothing, therefore ends — streamed and not — with one finishReason and one text
part in modelpool's name saying what the upstream did; a real answer gets no such part, and a native
`gemini` route's reply is relayed as it came (what Gemini itself sends is the client's business).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from google import genai
from google.genai import types

from gateway_server import GatewayServer
from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider, expected_text

KEY = "mp-gemini-empty-key"
HI = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
THINKING = {**HI, "generationConfig": {"thinkingConfig": {"includeThoughts": True, "thinkingBudget": 1024}}}
NOTES = {
    "thinks": "[modelpool: the model returned its reasoning but no answer text]",
    "mute": "[modelpool: the model returned an empty answer]",
}


@pytest.fixture(scope="module")
def ft() -> Iterator[FleetThread]:
    models = [
        SimModel("thinks", reasoning_tokens=3, output_tokens=0),
        SimModel("mute", output_tokens=0),
        SimModel("talks", output_tokens=4),
    ]
    fast: dict[str, Any] = {"ttft": 0.001, "tps": 5000.0}
    spec = FleetSpec(
        [
            SimProvider("chat", kind="openai", models=models, **fast),
            SimProvider("anth", kind="anthropic", models=models, **fast),
            SimProvider("gem", kind="gemini", dialects=("gemini",), models=models, **fast),
        ]
    )
    with FleetThread(spec) as fleet:
        yield fleet


@pytest.fixture(scope="module", params=["chat", "anth", "gem"])
def served(request: pytest.FixtureRequest, ft: FleetThread) -> Iterator[tuple[str, GatewayServer]]:
    cfg = ft.to_config(providers=[request.param], state={"backend": "memory"}, server={"api_keys": [KEY]})
    cfg["pool"] = {"retry_backoff": "1ms", "sticky": False}
    with GatewayServer(cfg) as gw:
        yield request.param, gw


def call(gw: GatewayServer, model: str, stream: bool) -> list[dict[str, Any]]:
    """The reply's GenerateContentResponse objects: every SSE event, or the one body."""
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    body = HI if model == "mute" else THINKING  # "mute" is asked for no thinking: the sim then has none
    resp = httpx.post(
        f"{gw.url}/v1beta/models/{model}:{method}", headers={"x-goog-api-key": KEY}, json=body, timeout=30
    )
    assert resp.status_code == 200, resp.text
    if not stream:
        return [resp.json()]
    assert resp.headers["content-type"].startswith("text/event-stream")
    return [orjson.loads(line[6:]) for line in resp.text.splitlines() if line.startswith("data: ")]


def texts(objs: list[dict[str, Any]]) -> tuple[str, str]:
    parts = [p for o in objs for p in o["candidates"][0]["content"]["parts"]]
    thought = "".join(p.get("text", "") for p in parts if p.get("thought"))
    return thought, "".join(p.get("text", "") for p in parts if not p.get("thought"))


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("model", ["thinks", "mute"])
def test_no_answer_text_still_ends_the_way_gemini_cli_requires(
    served: tuple[str, GatewayServer], model: str, stream: bool
) -> None:
    route, gw = served
    objs = call(gw, model, stream)
    finishes = [o["candidates"][0].get("finishReason") for o in objs]
    assert finishes[-1] == "STOP" and not any(finishes[:-1]), finishes
    assert all("functionCall" not in p for o in objs for p in o["candidates"][0]["content"]["parts"])
    thought, answer = texts(objs)
    assert bool(thought) == (model == "thinks")  # the reasoning still reaches the client, as thoughts
    if route == "gem":  # native: Gemini's own reply as it came, nothing added
        assert answer.strip() == "", objs[-1]
    else:
        assert answer == NOTES[model], objs[-1]
        assert objs[-1]["modelpool"]["route"] == f"{route}/{model}"


@pytest.mark.parametrize("stream", [True, False])
def test_a_real_answer_gets_no_note(served: tuple[str, GatewayServer], stream: bool) -> None:
    route, gw = served
    thought, answer = texts(call(gw, "talks", stream))
    assert thought and answer == expected_text(route, "talks", 4)


def test_the_sdk_reads_a_reasoning_only_answer(served: tuple[str, GatewayServer]) -> None:
    """google-genai: the stream's text is the note (`chunk.text` leaves thoughts out), one STOP at the end."""
    route, gw = served
    client = genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=gw.url, api_version="v1beta"))
    config = types.GenerateContentConfig(thinking_config=types.ThinkingConfig(include_thoughts=True))
    chunks = list(client.models.generate_content_stream(model="thinks", contents="hi", config=config))
    answer = "".join(c.text or "" for c in chunks)
    finishes = [c.candidates[0].finish_reason for c in chunks if c.candidates]
    finishes = [f for f in finishes if f]
    assert finishes == [types.FinishReason.STOP]
    assert answer == ("" if route == "gem" else NOTES["thinks"])
    whole = client.models.generate_content(model="mute", contents="hi")
    assert (whole.text or "") == ("" if route == "gem" else NOTES["mute"])
