"""Signed reasoning belongs to its signer (SPEC §3.10), through the real gateway: multi-turn conversations
under round-robin and forced failovers across routes that each reject another's signatures (the sim's
provenance check, as Anthropic and OpenAI do) never end in a signature error, the signer's own signatures
go back to it unchanged, and what was left out elsewhere is named in `x-modelpool-dropped`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest

from gateway_server import GatewayServer
from modelpool.sim import Fault, FleetSpec, FleetThread, SimModel, SimProvider
from modelpool.sim.provenance import ENCRYPTED_PREFIX, sealed_by
from support import base_config

CALLS = 200
TURNS = 5  # a conversation's turns before the next conversation starts


def _model() -> SimModel:
    return SimModel("m1", reasoning_tokens=3, output_tokens=4)


def _fast(pid: str, **kw: Any) -> SimProvider:
    return SimProvider(pid, models=[_model()], ttft=0.002, tps=5000.0, **kw)


@pytest.fixture
def anthropic_fleet() -> Iterator[FleetThread]:
    spec = FleetSpec(
        [
            _fast("a1", kind="anthropic", faults=[Fault("server_error", status=500, every=4)]),
            _fast("a2", kind="anthropic", faults=[Fault("server_error", status=500, every=7)]),
        ]
    )
    with FleetThread(spec) as ft:
        yield ft


def _signatures(body: dict[str, Any] | None) -> list[str]:
    out = []
    for msg in (body or {}).get("messages") or []:
        for block in msg.get("content") if isinstance(msg.get("content"), list) else []:
            if isinstance(block, dict) and block.get("type") == "thinking":
                out.append(block["signature"])
    return out


def test_anthropic_signatures_under_round_robin_and_failovers(anthropic_fleet: FleetThread) -> None:
    cfg = base_config(anthropic_fleet, strategy="round-robin", sticky=False, retries_per_route=0)
    dropped: list[str] = []
    with GatewayServer(cfg) as gw:
        client = anthropic.Anthropic(base_url=gw.url, api_key="k", max_retries=0)
        messages: list[dict[str, Any]] = []
        for i in range(CALLS):
            if i % TURNS == 0:
                messages = []
            messages.append({"role": "user", "content": f"step {i}"})
            raw = client.messages.with_raw_response.create(
                model="m1",
                max_tokens=256,
                messages=messages,
                thinking={"type": "enabled", "budget_tokens": 128},
            )
            reply = raw.parse()
            dropped.append(raw.headers.get("x-modelpool-dropped", ""))
            assert any(b.type == "thinking" for b in reply.content)
            messages.append({"role": "assistant", "content": [b.model_dump() for b in reply.content]})
    served_own = 0
    for pid in ("a1", "a2"):
        for rec in anthropic_fleet.calls(pid):
            makers = {sealed_by(s) for s in _signatures(rec.body)}
            assert makers <= {pid}, f"{pid} was sent another route's signature: {makers}"
            served_own += bool(makers)
    assert served_own > 0, "the signer's own signatures went back to it"
    assert any("thinking" in d for d in dropped), "a failover left another route's thinking out, named"


@pytest.fixture
def responses_fleet() -> Iterator[FleetThread]:
    spec = FleetSpec(
        [
            _fast("r1", dialects=("responses",), faults=[Fault("server_error", status=500, every=4)]),
            _fast("r2", dialects=("responses",), faults=[Fault("server_error", status=500, every=7)]),
        ]
    )
    with FleetThread(spec) as ft:
        yield ft


def test_responses_encrypted_reasoning_under_round_robin_and_failovers(responses_fleet: FleetThread) -> None:
    cfg = base_config(responses_fleet, strategy="round-robin", sticky=False, retries_per_route=0)
    for p in cfg["providers"]:  # type: ignore[attr-defined]
        p["dialects"] = ["responses"]
    with GatewayServer(cfg) as gw:
        client = openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
        items: list[Any] = []
        for i in range(CALLS):
            if i % TURNS == 0:
                items = []
            items.append({"role": "user", "content": f"step {i}"})
            reply = client.responses.create(
                model="m1",
                input=items,
                store=False,
                include=["reasoning.encrypted_content"],
                reasoning={"effort": "low"},
            )
            items += [o.model_dump(exclude_none=True) for o in reply.output]
    served_own = 0
    for pid in ("r1", "r2"):
        for rec in responses_fleet.calls(pid):
            blobs = [
                it.get("encrypted_content")
                for it in (rec.body or {}).get("input") or []
                if isinstance(it, dict) and it.get("type") == "reasoning"
            ]
            makers = {sealed_by(b, ENCRYPTED_PREFIX) for b in blobs}
            assert makers <= {pid}, f"{pid} was sent another route's encrypted reasoning: {makers}"
            served_own += bool(makers)
    assert served_own > 0


@pytest.fixture
def gemini_fleet() -> Iterator[FleetThread]:
    spec = FleetSpec(
        [
            _fast("g1", kind="gemini", faults=[Fault("server_error", status=500, every=4)]),
            _fast("g2", kind="gemini", faults=[Fault("server_error", status=500, every=7)]),
        ]
    )
    with FleetThread(spec) as ft:
        yield ft


def test_gemini_thought_signatures_under_round_robin_and_failovers(gemini_fleet: FleetThread) -> None:
    cfg = base_config(gemini_fleet, strategy="round-robin", sticky=False, retries_per_route=0)
    for p in cfg["providers"]:  # type: ignore[attr-defined]
        p["dialects"] = ["gemini"]
    with GatewayServer(cfg) as gw:
        contents: list[dict[str, Any]] = []
        for i in range(CALLS):
            if i % TURNS == 0:
                contents = []
            contents.append({"role": "user", "parts": [{"text": f"step {i}"}]})
            r = httpx.post(
                f"{gw.url}/v1beta/models/m1:generateContent",
                json={"contents": contents, "generationConfig": {"thinkingConfig": {"thinkingBudget": 256}}},
                headers={"x-goog-api-key": "k"},
                timeout=30,
            )
            assert r.status_code == 200, r.text
            contents.append(r.json()["candidates"][0]["content"])
    served_own = 0
    for pid in ("g1", "g2"):
        for rec in gemini_fleet.calls(pid):
            sigs = [
                part["thoughtSignature"]
                for content in (rec.body or {}).get("contents") or []
                for part in content.get("parts") or []
                if "thoughtSignature" in part
            ]
            makers = {sealed_by(s) for s in sigs}
            assert makers <= {pid}, f"{pid} was sent another route's thought signature: {makers}"
            served_own += bool(makers)
    assert served_own > 0


@pytest.fixture
def mixed_fleet() -> Iterator[FleetThread]:
    """Two Messages routes, a Responses one and a Gemini one, each signing its own reasoning."""
    spec = FleetSpec(
        [
            _fast("a1", kind="anthropic", faults=[Fault("server_error", status=500, every=5)]),
            _fast("a2", kind="anthropic", faults=[Fault("server_error", status=500, every=6)]),
            _fast(
                "r1", dialects=("openai", "responses"), faults=[Fault("server_error", status=500, every=7)]
            ),
            _fast("g1", kind="gemini", faults=[Fault("server_error", status=500, every=8)]),
        ]
    )
    with FleetThread(spec) as ft:
        yield ft


@pytest.mark.parametrize("client", ["anthropic", "responses", "gemini"])
def test_a_pool_of_every_signing_dialect_never_sends_a_foreign_signature(
    mixed_fleet: FleetThread, client: str
) -> None:
    """Each client on a pool that mixes Messages, Responses and Gemini routes: native where the route speaks
    its dialect, translated elsewhere; 200 multi-turn calls under round-robin and failovers, no signature
    error, and no route ever sent a signature another route made."""
    mixed_fleet.reset_calls()
    cfg = base_config(mixed_fleet, strategy="round-robin", sticky=False, retries_per_route=0)
    with GatewayServer(cfg) as gw:
        history: list[Any] = []
        for i in range(CALLS):
            if i % TURNS == 0:
                history = []
            history += _turn(gw.url, client, history, f"step {i}")
    for pid in ("a1", "a2", "r1", "g1"):
        for rec in mixed_fleet.calls(pid):
            makers = {sealed_by(b) for b in _anthropic_and_gemini_blobs(rec.body)}
            makers |= {sealed_by(b, ENCRYPTED_PREFIX) for b in _encrypted(rec.body)}
            assert makers - {None} <= {pid}, f"{pid} was sent another route's signature: {makers}"


def _turn(url: str, client: str, history: list[Any], text: str) -> list[Any]:
    """One turn: the request with `history`, returns what the turn adds to it (the user's, the reply)."""
    if client == "anthropic":
        user = {"role": "user", "content": text}
        reply = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0).messages.create(
            model="m1",
            max_tokens=256,
            messages=[*history, user],
            thinking={"type": "enabled", "budget_tokens": 128},
        )
        return [user, {"role": "assistant", "content": [b.model_dump() for b in reply.content]}]
    if client == "responses":
        user = {"role": "user", "content": text}
        r = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0).responses.create(
            model="m1",
            input=[*history, user],
            store=False,
            include=["reasoning.encrypted_content"],
            reasoning={"effort": "low"},
        )
        return [user, *(o.model_dump(exclude_none=True) for o in r.output)]
    user = {"role": "user", "parts": [{"text": text}]}
    g = httpx.post(
        f"{url}/v1beta/models/m1:generateContent",
        json={"contents": [*history, user], "generationConfig": {"thinkingConfig": {"thinkingBudget": 256}}},
        headers={"x-goog-api-key": "k"},
        timeout=30,
    )
    assert g.status_code == 200, g.text
    return [user, g.json()["candidates"][0]["content"]]


def _anthropic_and_gemini_blobs(body: dict[str, Any] | None) -> list[str]:
    body = body or {}
    out = _signatures(body)
    for content in body.get("contents") or []:
        out += [p["thoughtSignature"] for p in content.get("parts") or [] if "thoughtSignature" in p]
    return out


def _encrypted(body: dict[str, Any] | None) -> list[str]:
    items = (body or {}).get("input")
    return (
        [
            it["encrypted_content"]
            for it in items
            if isinstance(items, list)
            for it in [it]
            if isinstance(it, dict) and it.get("type") == "reasoning" and "encrypted_content" in it
        ]
        if isinstance(items, list)
        else []
    )
