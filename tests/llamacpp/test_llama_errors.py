"""llama-server's own errors through modelpool, a llama-server killed mid-stream, and failover onto it
(issue #25): its 4xx reach the client with its message (in the client's dialect where translated), a crash
mid-answer is a detectable failure, never a clean truncation."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from llama_server import ALIAS, LlamaServer
from llamacpp.helpers import anth, chat_body, gateway_config, oai
from modelpool.sim import Fault, FleetSpec, FleetThread, SimModel, SimProvider
from serve_process import ServeProcess, serve_process

# A real model on 2 shared cores: a hundred streams take 15 s on a quiet machine, minutes on a loaded one.
pytestmark = pytest.mark.timeout(900)

# ~2,200 tokens: over the slot, yet under 1.5 × its window by modelpool's estimate, so llama-server itself
# refuses it (modelpool refuses only what is clearly too long, routing/windows.py)
MID = "word " * 2200


@pytest.fixture(scope="module")
def gateway(llama: LlamaServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """llama-server natively (all three dialects) and, as `llama-chat`, limited to Chat Completions."""
    cfg = gateway_config(
        llama.provider(),
        llama.provider("llama-chat", dialects=["openai"], models=[f"{ALIAS}"]),
        groups=[
            {"id": "native", "models": [f"llama/{ALIAS}"]},
            {"id": "translated", "models": [f"llama-chat/{ALIAS}"]},
        ],
    )
    with serve_process(cfg, tmp_path_factory.mktemp("gw")) as gw:
        yield gw


def llama_message(llama: LlamaServer, body: dict[str, object]) -> str:
    reply = llama.post("/v1/chat/completions", body)
    assert reply.status_code == 400
    return str(reply.json()["error"]["message"])


def test_a_prompt_over_the_context_is_said_in_each_clients_words(
    gateway: ServeProcess, llama: LlamaServer
) -> None:
    """llama-server's overflow 400 ("request (N tokens) exceeds the available context size (M tokens)")
    reaches each client in the words its agent CLI acts on (SPEC §1.7), with llama's own numbers."""
    said = llama_message(llama, chat_body(MID, 8))
    found = re.search(r"request \((\d+) tokens\) exceeds the available context size \((\d+) tokens\)", said)
    assert found, said
    n, m = found.groups()
    for stream in (False, True):
        with pytest.raises(openai.BadRequestError) as err:
            r = oai(gateway.url).chat.completions.create(**chat_body(MID, 8), stream=stream)
            list(r) if stream else None  # type: ignore[call-overload]
        assert err.value.status_code == 400 and err.value.code == "context_length_exceeded"
        assert f"maximum context length is {m} tokens. However, your messages resulted in {n} tokens" in str(
            err.value
        )
    # Native and translated (an Anthropic client on the Chat-only route): what Claude Code compacts on.
    for model in ("native", "translated"):
        with pytest.raises(anthropic.BadRequestError) as aerr:
            anth(gateway.url).messages.create(
                model=model, max_tokens=8, messages=[{"role": "user", "content": MID}]
            )
        assert aerr.value.status_code == 400
        body = aerr.value.response.json()
        assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
        assert body["error"]["message"] == f"prompt is too long: {n} tokens > {m} maximum", (model, body)


def test_a_bad_parameter_is_llamas_400_with_its_message(gateway: ServeProcess, llama: LlamaServer) -> None:
    want = llama_message(llama, chat_body("Hi", 8, n=3))
    reply = httpx.post(
        gateway.url + "/v1/chat/completions",
        json={**chat_body("Hi", 8, n=3), "model": "native"},
        headers={"authorization": "Bearer k"},
        timeout=60,
    )
    assert reply.status_code == 400
    assert reply.json()["error"]["message"] == want  # native: llama's body unchanged
    # The route is not blamed for the request's own fault: the next call is served.
    ok = oai(gateway.url).chat.completions.create(**{**chat_body("Hi", 4), "model": "native"})
    assert ok.choices[0].message.content


def test_a_bad_parameter_on_a_translated_call_is_llamas_400_in_the_clients_dialect(
    gateway: ServeProcess, llama: LlamaServer
) -> None:
    """An Anthropic and a Responses client on the Chat-only route, with a JSON schema llama cannot use: the
    translation carries it to llama's Chat endpoint as `response_format`, llama refuses it, and each client
    gets a 400 in its own dialect with llama's message."""
    schema = {"type": "frobnicate"}
    want = llama_message(
        llama,
        chat_body(
            "Hi", 8, response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}
        ),
    )
    assert "frobnicate" in want
    with pytest.raises(anthropic.BadRequestError) as aerr:
        anth(gateway.url).messages.create(
            model="translated",
            max_tokens=8,
            messages=[{"role": "user", "content": "Hi"}],
            extra_body={"output_config": {"format": {"type": "json_schema", "schema": schema}}},
        )
    body = aerr.value.response.json()
    assert aerr.value.status_code == 400
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error", body
    # A translated call's error is modelpool's (WalkFailed): it names the pool, then llama's words in full.
    assert body["error"]["message"] == f"pool 'translated': {want}"
    with pytest.raises(openai.BadRequestError) as rerr:
        oai(gateway.url).responses.create(
            model="translated",
            max_output_tokens=8,
            input="Hi",
            text={"format": {"type": "json_schema", "name": "x", "schema": schema}},
        )
    assert rerr.value.status_code == 400
    assert rerr.value.response.json()["error"]["message"] == f"pool 'translated': {want}"
    assert rerr.value.response.json()["error"]["type"] == "invalid_request_error"


# What a long answer sends, per dialect: the path, the body, a line that shows answer text has come, the
# success terminator, and the line of the dialect's error event.
CUT = {
    "chat": ("/v1/chat/completions", {}, '"content":"', "data: [DONE]", '"error"'),
    "messages": ("/v1/messages", {}, '"text_delta"', "message_stop", "event: error"),
    "responses": (
        "/v1/responses",
        {"max_output_tokens": 1500},
        "output_text.delta",
        "response.completed",
        "event: error",
    ),
}


@pytest.mark.parametrize("dialect", list(CUT))
def test_a_llama_server_killed_mid_stream_is_a_detectable_failure(tmp_path: Path, dialect: str) -> None:
    """Native in each dialect: llama is killed once answer text has reached the client; the client gets its
    dialect's error event and no success terminator (never a clean truncation)."""
    path, extra, text_line, terminator, error_line = CUT[dialect]
    victim = LlamaServer(tmp_path / "victim", ctx=2048, slots=1).start()
    try:
        cfg = gateway_config(victim.provider(), retries_per_route=0)
        with serve_process(cfg, tmp_path) as gw:
            body: dict[str, Any] = {
                **chat_body("Write a very long story about the sea.", 1500),
                "stream": True,
            }
            body.pop("seed")
            if dialect == "responses":
                body = {"model": ALIAS, "input": body["messages"][0]["content"], "stream": True, **extra}
            seen: list[str] = []
            with httpx.stream(
                "POST", gw.url + path, json=body, headers={"authorization": "Bearer k"}, timeout=60
            ) as resp:
                assert resp.status_code == 200
                killer: threading.Thread | None = None
                for line in resp.iter_lines():
                    seen.append(line)
                    if killer is None and text_line in line:
                        killer = threading.Thread(target=victim.kill)
                        killer.start()
            assert killer is not None
            killer.join()
        text = "\n".join(seen)
        assert terminator not in text  # no success terminator after a cut answer
        assert error_line in text  # the client is told, in its dialect's error event
        if dialect == "responses":  # numbered after what llama's own (completed) events were given
            numbers = [json.loads(ln[6:])["sequence_number"] for ln in seen if ln.startswith("data: ")]
            assert numbers == list(range(len(numbers)))
    finally:
        victim.stop()


def test_a_failing_route_fails_over_to_llama_before_content(llama: LlamaServer, tmp_path: Path) -> None:
    broken = SimProvider(
        "broken", models=[SimModel(ALIAS)], ttft=0.01, faults=[Fault("server_error", status=500)]
    )
    with FleetThread(FleetSpec([broken])) as ft:
        sim = ft.to_config()["providers"]
        cfg = gateway_config(*sim, llama.provider(models=[ALIAS]), provider_order=["broken", "llama"])
        with serve_process(cfg, tmp_path) as gw:
            for stream in (False, True):
                t0 = time.monotonic()
                raw = oai(gw.url).chat.completions.with_raw_response.create(
                    **chat_body("Say hi", 8), stream=stream
                )
                assert raw.headers["x-modelpool-route"] == f"llama/{ALIAS}"
                if stream:
                    text = "".join(c.choices[0].delta.content or "" for c in raw.parse() if c.choices)
                else:
                    text = raw.parse().choices[0].message.content or ""  # type: ignore[union-attr]
                assert text and time.monotonic() - t0 < 60
            assert ft.calls("broken"), "the failing route was tried first"


def test_a_llama_server_started_after_the_gateway_is_found(tmp_path: Path) -> None:
    """Started together (a compose file, a boot script), the gateway asks before llama-server is up
    (refused, then `503 Loading model`): discovery keeps trying in the background and the pool appears."""
    late = LlamaServer(tmp_path / "late", ctx=2048, slots=1)
    try:
        with serve_process(gateway_config(late.provider()), tmp_path) as gw:
            assert httpx.get(gw.url + "/v1/models", timeout=10).json()["data"] == []
            late.start()
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                if httpx.get(gw.url + "/v1/models", timeout=10).json()["data"]:
                    break
                time.sleep(0.5)
            reply = oai(gw.url).chat.completions.create(**chat_body("Say hi", 4))
            assert reply.choices[0].message.content
    finally:
        late.stop()
