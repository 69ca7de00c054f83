"""The client fidelity corpus (tests/protocols/corpus/clients) holds what it claims to hold.

Requests were recorded from the real CLIs with tests/clients/recorder.py; the replay tests through every
relay pairing rely on these fields being there. Reply fixtures must parse with the official SDKs' event
models, so a typo in a hand-written event cannot pass for a real upstream format.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from anthropic.types import RawMessageStreamEvent
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

CORPUS = Path(__file__).resolve().parents[1] / "protocols" / "corpus" / "clients"
SECRETS = {"authorization", "x-api-key", "cookie", "proxy-authorization"}


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CORPUS / name).read_text())
    return data


@pytest.mark.parametrize("name", sorted(p.name for p in CORPUS.glob("*.json")))
def test_recorded_request_is_complete_and_has_no_secret(name: str) -> None:
    data = load(name)
    assert {"client", "dialect", "method", "path", "headers", "body", "added_by_hand", "notes"} <= set(data)
    assert not SECRETS & {k.lower() for k in data["headers"]}
    if data["dialect"] == "gemini":  # the stream is asked for in the path
        assert ":streamGenerateContent?alt=sse" in data["path"] and "x-goog-api-key" not in data["headers"]
    else:
        assert data["body"]["stream"] is True
    assert ("augmented" in name) == bool(data["added_by_hand"])


@pytest.mark.parametrize("name", ["claude_code_turn1.json", "claude_code_turn2.json"])
def test_claude_code_request_fields(name: str) -> None:
    data = load(name)
    beta = data["headers"]["anthropic-beta"].split(",")
    assert {
        "claude-code-20250219",
        "context-management-2025-06-27",
        "interleaved-thinking-2025-05-14",
    } <= set(beta)
    assert data["path"] == "/v1/messages?beta=true" and data["headers"]["anthropic-version"] == "2023-06-01"
    body = data["body"]
    assert body["context_management"]["edits"][0]["type"] == "clear_thinking_20251015"
    assert body["thinking"]["type"] == "enabled"
    assert "Write" in {t["name"] for t in body["tools"]}
    assert any("cache_control" in b for b in body["system"])


def test_claude_code_second_turn_sends_signed_thinking_back() -> None:
    body = load("claude_code_turn2.json")["body"]
    assistant = body["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"][0]["type"] == "thinking" and assistant["content"][0]["signature"]
    assert body["messages"][2]["content"][0]["type"] == "tool_result"


def test_claude_code_augmented_request_marks_its_additions() -> None:
    body = load("claude_code_turn2_augmented.json")["body"]
    assert body["system"][1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert any(t.get("type") == "web_search_20250305" for t in body["tools"])
    kinds = [b["type"] for b in body["messages"][1]["content"]]
    assert kinds == ["thinking", "server_tool_use", "web_search_tool_result", "text", "tool_use"]


@pytest.mark.parametrize("name", ["codex_turn1.json", "codex_turn2.json"])
def test_codex_request_fields(name: str) -> None:
    body = load(name)["body"]
    tools = {t.get("name") or t["type"]: t for t in body["tools"]}
    assert tools["apply_patch"]["type"] == "custom" and tools["apply_patch"]["format"]["syntax"] == "lark"
    assert tools["web_search"]["type"] == "web_search"
    assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
    assert body["prompt_cache_key"] and body["text"] == {"verbosity": "low"}


def test_codex_second_turn_sends_encrypted_reasoning_and_patch_result_back() -> None:
    items = load("codex_turn2.json")["body"]["input"]
    kinds = [i["type"] for i in items[-3:]]
    assert kinds == ["reasoning", "custom_tool_call", "custom_tool_call_output"]
    assert items[-3]["encrypted_content"]
    assert items[-2]["call_id"] == items[-1]["call_id"]
    augmented = load("codex_turn2_augmented.json")["body"]
    assert {"type": "local_shell"} in augmented["tools"]
    assert [i["type"] for i in augmented["input"][-2:]] == ["local_shell_call", "local_shell_call_output"]


def sse_events(name: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for block in (CORPUS / name).read_text().split("\n\n"):
        if block.strip():
            event, data = block.split("\n")
            assert event.startswith("event: ") and data.startswith("data: ")
            out.append((event[7:], json.loads(data[6:])))
    return out


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("anthropic_reply_web_search_citations.sse", RawMessageStreamEvent),
        ("anthropic_reply_claude_code_write.sse", RawMessageStreamEvent),
        ("responses_reply_codex_apply_patch.sse", ResponseStreamEvent),
    ],
)
def test_reply_fixture_parses_with_the_sdk(name: str, model: Any) -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(model)
    seen = set()
    for event, data in sse_events(name):
        assert data["type"] == event
        seen.add(event if event != "content_block_delta" else data["delta"]["type"])
        if event != "ping":  # ping is not in the SDK union; the SDK skips it
            adapter.validate_python(data)
    wanted = {
        "anthropic_reply_web_search_citations.sse": {"citations_delta", "signature_delta"},
        "anthropic_reply_claude_code_write.sse": {"signature_delta", "input_json_delta"},
        "responses_reply_codex_apply_patch.sse": {"response.custom_tool_call_input.delta"},
    }[name]
    assert wanted <= seen


def test_gemini_cli_request_fields() -> None:
    """What Gemini CLI 0.61.0 sends (shared/reference/gemini.md): function declarations with
    `parametersJsonSchema`, `thinkingConfig.includeThoughts`, its own `x-goog-api-client`; the second turn
    echoes the call's id on its response and adds the placeholder signature to the call."""
    first, second = load("gemini_cli_turn1.json"), load("gemini_cli_turn2.json")
    for data in (first, second):
        body = data["body"]
        assert set(body) == {"contents", "systemInstruction", "tools", "generationConfig"}
        decls = {d["name"]: d for t in body["tools"] for d in t.get("functionDeclarations", [])}
        assert {"write_file", "replace", "run_shell_command"} <= set(decls)
        assert all("parametersJsonSchema" in d for d in decls.values())
        assert body["generationConfig"]["thinkingConfig"]["includeThoughts"] is True
        assert data["headers"]["x-goog-api-client"].startswith("google-genai-sdk/")
        assert data["headers"]["user-agent"].startswith("GeminiCLI")
    model_turn, answer = second["body"]["contents"][-2:]
    call = model_turn["parts"][0]
    assert call["thoughtSignature"] == "skip_thought_signature_validator"
    assert answer["parts"][0]["functionResponse"]["id"] == call["functionCall"]["id"]
