"""Session ids (SPEC §8) from what the real agent CLIs send: the id the user sees in the CLI, never a blob.
The requests are the recorded corpus files (tests/protocols/corpus/clients, recorded from the real CLIs)."""

from __future__ import annotations

import json
from pathlib import Path

from modelpool.routing.session import session_id

CORPUS = Path(__file__).resolve().parent.parent / "protocols" / "corpus" / "clients"


def recorded(name: str) -> tuple[dict[str, str], dict]:
    data = json.loads((CORPUS / f"{name}.json").read_text())
    return {k.lower(): v for k, v in data["headers"].items()}, data["body"]


def test_claude_code_is_its_session_header_uuid() -> None:
    headers, body = recorded("claude_code_turn1")
    sid = session_id(headers, body, "p")
    assert sid == headers["x-claude-code-session-id"] == "af586e5d-00a8-4858-baca-8021cb0a8823"


def test_claude_code_without_the_header_is_the_session_id_inside_its_json_user_id() -> None:
    headers, body = recorded("claude_code_turn2")
    del headers["x-claude-code-session-id"]
    inner = json.loads(body["metadata"]["user_id"])["session_id"]
    assert session_id(headers, body, "p") == inner
    assert not session_id(headers, body, "p").startswith("{")


def test_a_json_user_id_without_a_session_falls_through_to_the_fingerprint() -> None:
    body = {"metadata": {"user_id": '{"device_id": "d1", "account_uuid": ""}'}, "messages": []}
    assert session_id({}, body, "p").startswith("fp-")
    assert session_id({}, {"metadata": {"user_id": "plain-user"}}, "p") == "plain-user"
    assert session_id({}, {"metadata": {"user_id": "{not json"}}, "p") == "{not json"


def test_codex_is_its_session_header() -> None:
    headers, body = recorded("codex_turn1")
    assert session_id(headers, body, "p") == headers["session-id"] == "01a2336a-545e-76f2-8eb5-a8ef7989267d"
    del headers["session-id"]  # older Codex releases: `session_id` / `conversation_id`
    assert session_id({"conversation_id": "c-1"}, {}, "p") == "c-1"
    assert session_id({"session_id": "s-1", "conversation_id": "c-1"}, {}, "p") == "s-1"


def test_explicit_modelpool_headers_win_and_ids_are_bounded() -> None:
    headers, body = recorded("claude_code_turn1")
    assert session_id({**headers, "x-session-id": "mine"}, body, "p") == "mine"
    assert len(session_id({"x-session-id": "x" * 5000}, {}, "p")) == 200
