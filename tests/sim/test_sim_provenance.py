"""What real providers refuse, the sim refuses too: another provider's signed thinking or encrypted
reasoning, and `context_management` without its beta header (a provider with strict=False accepts all)."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx
import pytest
from openai import BadRequestError, OpenAI

from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider
from modelpool.sim.provenance import ENCRYPTED_PREFIX, sealed_by

GW_MODEL = "deepseek/deepseek-v4.1-flash-1017"
USER = {"role": "user", "content": "hello"}


def signed_turn(fleet: FleetThread) -> list[dict[str, Any]]:
    c = anthropic.Anthropic(base_url=fleet.root_url("omni"), api_key="x", max_retries=0)
    msg = c.messages.create(model="thinker", max_tokens=100, messages=[USER])  # type: ignore[list-item]
    assert sealed_by(msg.content[0].signature) == "omni"  # type: ignore[union-attr]
    blocks = [b.model_dump(exclude_none=True) for b in msg.content]
    return [USER, {"role": "assistant", "content": blocks}, {"role": "user", "content": "and?"}]


def messages(fleet: FleetThread, provider: str, history: list[dict[str, Any]], **kw: Any) -> httpx.Response:
    body = {"model": "thinker", "max_tokens": 100, "messages": history, **kw.pop("body", {})}
    return httpx.post(fleet.root_url(provider) + "/v1/messages", json=body, timeout=10, **kw)


def test_signed_thinking_only_where_it_was_made(fleet: FleetThread) -> None:
    history = signed_turn(fleet)
    assert messages(fleet, "omni", history).status_code == 200
    refused = messages(fleet, "claude", history)
    assert refused.status_code == 400
    err = refused.json()["error"]
    assert err["type"] == "invalid_request_error" and "Invalid `signature`" in err["message"]
    assert err["message"].startswith("messages.1.content.0:")
    # A signature the sim did not make (recorded from the real service) cannot be checked: accepted.
    history[1]["content"][0]["signature"] = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
    assert messages(fleet, "claude", history).status_code == 200


def test_encrypted_reasoning_only_where_it_was_made(fleet: FleetThread) -> None:
    omni = OpenAI(base_url=fleet.base_url("omni"), api_key="x", max_retries=0)
    first = omni.responses.create(
        model="thinker", input="think", include=["reasoning.encrypted_content"], store=False
    )
    reasoning = first.output[0].model_dump(exclude_none=True)
    assert sealed_by(reasoning["encrypted_content"], ENCRYPTED_PREFIX) == "omni"
    history = [{"role": "user", "content": "think"}, reasoning, {"role": "user", "content": "more"}]
    assert omni.responses.create(model="thinker", input=history).status == "completed"  # type: ignore[arg-type]
    vercel = OpenAI(base_url=fleet.base_url("vercel"), api_key="x", max_retries=0)
    with pytest.raises(BadRequestError) as info:
        vercel.responses.create(model=GW_MODEL, input=history)  # type: ignore[arg-type]
    assert info.value.code == "invalid_encrypted_content"
    history[1]["encrypted_content"] = ENCRYPTED_PREFIX + "not-ours"
    assert vercel.responses.create(model=GW_MODEL, input=history).status == "completed"  # type: ignore[arg-type]


def test_context_management_needs_its_beta(fleet: FleetThread) -> None:
    body = {"context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]}}
    refused = messages(fleet, "claude", [USER], body=body)
    assert refused.status_code == 400
    assert refused.json()["error"]["message"] == "context_management: Extra inputs are not permitted"
    beta = {"anthropic-beta": "claude-code-20250219,context-management-2025-06-27"}
    assert messages(fleet, "claude", [USER], body=body, headers=beta).status_code == 200
    assert fleet.calls("claude")[0].outcome == "http_400"


def test_strict_off_accepts_everything() -> None:
    spec = FleetSpec([SimProvider("lax", kind="anthropic", strict=False, models=[SimModel("thinker")])])
    with FleetThread(spec) as ft:
        body = {"context_management": {"edits": []}}
        assert messages(ft, "lax", [USER], body=body).status_code == 200
