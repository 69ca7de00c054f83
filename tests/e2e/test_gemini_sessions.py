"""Session ids of Gemini calls through the server (SPEC §8; issue #27 audit, gap 4).

Gemini CLI sends no session id (no header, nothing in the body): its conversation is the fingerprint of
the pool, its `systemInstruction` and its first user content — the `<session_context>` block and the
prompt, resent unchanged on every turn. Two conversations recorded from Gemini CLI 0.61.0 (the corpus,
the second with another prompt) therefore each keep one id over their turns, and differ; the google-genai
Python SDK's snake_case `system_instruction` counts like Gemini CLI's camelCase one.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from google import genai
from google.genai import types

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider

KEY = "mp-gemini-sessions-key"
ADMIN = {"authorization": f"Bearer {ADMIN_TOKEN}"}
CORPUS = Path(__file__).resolve().parent.parent / "protocols" / "corpus" / "clients"


@pytest.fixture(scope="module")
def gw() -> Iterator[GatewayServer]:
    spec = FleetSpec([SimProvider("gem", kind="gemini", models=[SimModel("m1")], ttft=0.001, tps=5000.0)])
    with FleetThread(spec) as fleet:
        cfg = fleet.to_config(
            state={"backend": "memory"}, server={"api_keys": [KEY], "admin_token": ADMIN_TOKEN}
        )
        with GatewayServer(cfg) as server:
            yield server


def recorded(turn: int) -> dict[str, Any]:
    return json.loads((CORPUS / f"gemini_cli_turn{turn}.json").read_text())["body"]  # type: ignore[no-any-return]


def send(gw: GatewayServer, body: dict[str, Any]) -> str:
    """A Gemini CLI-like call (its headers: no session id among them); its request id."""
    resp = httpx.post(
        f"{gw.url}/v1beta/models/m1:streamGenerateContent?alt=sse",
        headers={"x-goog-api-key": KEY, "user-agent": "GeminiCLI-tui/0.61.0/m1 (linux; x64; terminal)"},
        json=body,
        timeout=30,
    )
    assert resp.status_code == 200, resp.text
    return resp.headers["x-request-id"]


def session_of(gw: GatewayServer, request_ids: list[str]) -> list[str]:
    """The session each call was booked under (the history book writes every 0.5 s)."""
    deadline = time.monotonic() + 10
    while True:
        found: dict[str, str] = {}
        for s in httpx.get(f"{gw.url}/admin/sessions", headers=ADMIN).json()["sessions"]:
            page = httpx.get(f"{gw.url}/admin/sessions/{s['session']}", headers=ADMIN).json()
            found |= {c["request_id"]: s["session"] for c in page["calls"]}
        if all(r in found for r in request_ids) or time.monotonic() > deadline:
            return [found.get(r, "") for r in request_ids]
        time.sleep(0.1)


def other_prompt(body: dict[str, Any]) -> dict[str, Any]:
    """The same conversation with another prompt (the first content's last part)."""
    body = copy.deepcopy(body)
    body["contents"][0]["parts"][-1]["text"] = "Create a file other.txt containing the line: other"
    return body


def test_two_gemini_cli_conversations_are_two_stable_sessions(gw: GatewayServer) -> None:
    first, second = recorded(1), recorded(2)
    assert first["contents"][0] == second["contents"][0]  # what Gemini CLI resends on every turn
    calls = [send(gw, first), send(gw, second), send(gw, other_prompt(first)), send(gw, other_prompt(second))]
    a1, a2, b1, b2 = session_of(gw, calls)
    assert a1 == a2 and b1 == b2 and a1 != b1, (a1, a2, b1, b2)
    assert a1.startswith("fp-") and b1.startswith("fp-")


def test_the_system_instruction_tells_conversations_apart(gw: GatewayServer) -> None:
    """The same first message under two system instructions: two sessions; the pirate's next turn stays in
    the pirate's. From the google-genai SDK (`systemInstruction`) and from a raw client writing the API's
    snake_case `system_instruction`, which the API accepts too."""
    client = genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=gw.url, api_version="v1beta"))
    hello = types.Content(role="user", parts=[types.Part(text="Good morning")])
    turns = [
        ("You are a pirate.", [hello]),
        ("You are a lawyer.", [hello]),
        ("You are a pirate.", [hello, types.Content(role="model", parts=[types.Part(text="Arr")]), "And?"]),
    ]
    ids = []
    for system, contents in turns:
        config = types.GenerateContentConfig(system_instruction=system)
        reply = client.models.generate_content(model="m1", contents=contents, config=config)  # type: ignore[arg-type]
        assert reply.sdk_http_response and reply.sdk_http_response.headers
        ids.append(reply.sdk_http_response.headers["x-request-id"])
    for system in ("You are a pirate.", "You are a lawyer."):
        body = {"contents": [{"role": "user", "parts": [{"text": "Good evening"}]}]}
        ids.append(send(gw, {**body, "system_instruction": {"parts": [{"text": system}]}}))
    pirate, lawyer, pirate_again, raw_pirate, raw_lawyer = session_of(gw, ids)
    assert pirate == pirate_again and pirate != lawyer, (pirate, lawyer, pirate_again)
    assert raw_pirate != raw_lawyer, raw_pirate
