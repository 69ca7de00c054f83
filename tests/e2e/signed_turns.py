"""One conversation turn per client dialect (Anthropic Messages, Responses, Gemini; streamed or not) through
the gateway, with what the gateway answered in its headers and what each sim route was sent for that turn —
and the checks SPEC §3.10 makes on them: no route is sent a signature another route made, a route is sent
every signature it made earlier in the conversation unchanged, and whenever a route other than a signature's
signer serves, `x-modelpool-dropped` names what was left out."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import anthropic
import httpx
import openai

from modelpool.sim import FleetThread
from modelpool.sim.provenance import ENCRYPTED_PREFIX, sealed_by
from modelpool.sim.records import CallRecord

# What `x-modelpool-dropped` calls another route's signed reasoning left out, per client dialect
# (modelpool.signers.strip).
DROPPED = {
    "anthropic": "thinking (signed by another route)",
    "responses": "reasoning (encrypted by another route)",
    "gemini": "thoughtSignature (from another route)",
}
_MARKS = ("mp1.sig.", "mp1.red.")  # modelpool's seal on a signature it carries in another dialect


@dataclass
class Turn:
    n: int
    client: str
    stream: bool
    history: list[Any]  # what the client sent: the conversation so far and this turn's user message
    route: str  # x-modelpool-route
    dropped: str  # x-modelpool-dropped ("" when absent)
    sent: dict[str, list[CallRecord]] = field(default_factory=dict)  # each sim route's requests this turn
    reply: list[Any] = field(default_factory=list)  # what the turn adds to the history


def maker(blob: str) -> str | None:
    """The sim route that made a signature, through modelpool's seal when it carried it across dialects."""
    for mark in _MARKS:
        if blob.startswith(mark):
            blob = blob[len(mark) :]
    return sealed_by(blob) or sealed_by(blob, ENCRYPTED_PREFIX)


def _unsealed(blob: str) -> str:
    for mark in _MARKS:
        if blob.startswith(mark):
            return blob[len(mark) :]
    return blob


def blobs(body: Any) -> list[str]:
    """Every signature in a request body or history of any dialect, oldest first, as its maker made it:
    Messages thinking signatures and redacted data, Chat `thinking_blocks`, Responses encrypted reasoning,
    Gemini thought signatures."""
    out: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            kind = node.get("type")
            if kind == "thinking" and isinstance(node.get("signature"), str):
                out.append(node["signature"])
            elif kind == "redacted_thinking" and isinstance(node.get("data"), str):
                out.append(node["data"])
            elif kind == "reasoning" and isinstance(node.get("encrypted_content"), str):
                out.append(node["encrypted_content"])
            for key in ("thoughtSignature", "thought_signature"):
                if isinstance(node.get(key), str):
                    out.append(node[key])
            for value in node.values():
                if isinstance(value, list | dict):
                    walk(value)

    walk(body)
    return [_unsealed(b) for b in out if b]


def check_turn(turn: Turn, routes: dict[str, str]) -> tuple[bool, bool]:
    """SPEC §3.10 on one turn (`routes`: sim provider → its route key). Returns (the signer served and was
    sent its own signatures, another route served and the header named what was left out)."""
    made = blobs(turn.history)
    makers = [maker(b) for b in made]
    assert None not in makers, f"turn {turn.n}: a signature no sim route made: {made}"
    served_by = next(pid for pid, key in routes.items() if key == turn.route)
    for pid, records in turn.sent.items():
        own = [b for b, m in zip(made, makers, strict=True) if m == pid]
        for rec in records:
            sent = blobs(rec.body)
            foreign = {maker(b) for b in sent} - {pid}
            assert not foreign, f"turn {turn.n}: {pid} was sent signatures of {foreign}"
            # Its own, every one of them, unchanged — whether it served or failed (a retry keeps them too).
            assert sent == own, f"turn {turn.n}: {pid} was sent {len(sent)} of its {len(own)} signatures"
    assert turn.sent.get(served_by), f"turn {turn.n}: {turn.route} served but was sent nothing"
    elsewhere = any(m != served_by for m in makers)
    name = DROPPED[turn.client]
    if elsewhere:
        assert name in turn.dropped, f"turn {turn.n} ({turn.route}): dropped {turn.dropped!r} lacks {name!r}"
    else:
        assert name not in turn.dropped, f"turn {turn.n}: nothing of another route, yet {turn.dropped!r}"
    return any(m == served_by for m in makers), elsewhere


def run_turn(url: str, fleet: FleetThread, client: str, stream: bool, history: list[Any], n: int) -> Turn:
    """One turn with `history`; the sim routes' requests made during it are collected in `Turn.sent`."""
    before = {pid: len(fleet.calls(pid)) for pid in fleet.fleet.provider_ids}
    turn = _CLIENTS[client](url, stream, history, f"step {n}")
    turn.n = n
    turn.sent = {
        pid: fleet.calls(pid)[count:] for pid, count in before.items() if len(fleet.calls(pid)) > count
    }
    return turn


def _anthropic(url: str, stream: bool, history: list[Any], text: str) -> Turn:
    c = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
    messages = [*history, {"role": "user", "content": text}]
    ask: dict[str, Any] = {
        "model": "m1",
        "max_tokens": 256,
        "messages": messages,
        "thinking": {"type": "enabled", "budget_tokens": 128},
    }
    if stream:
        with c.messages.stream(**ask) as s:
            message = s.get_final_message()
            headers = s.response.headers
    else:
        raw = c.messages.with_raw_response.create(**ask)
        message, headers = raw.parse(), raw.headers
    content = [b.model_dump(exclude_none=True) for b in message.content]
    assert any(b["type"] == "thinking" for b in content), content  # signed or not: whose it is decides
    reply = [messages[-1], {"role": "assistant", "content": content}]
    return _turn("anthropic", stream, messages, headers, reply)


def _responses(url: str, stream: bool, history: list[Any], text: str) -> Turn:
    c = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
    items = [*history, {"role": "user", "content": text}]
    ask: dict[str, Any] = {
        "model": "m1",
        "input": items,
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "reasoning": {"effort": "low"},
    }
    raw = c.responses.with_raw_response.create(**ask, stream=stream)
    if stream:
        done = [e for e in raw.parse() if e.type == "response.completed"]
        assert len(done) == 1
        output = done[0].response.output  # type: ignore[union-attr]
    else:
        output = raw.parse().output
    out = [o.model_dump(exclude_none=True) for o in output]
    assert any(o["type"] == "reasoning" for o in out), out
    return _turn("responses", stream, items, raw.headers, [items[-1], *out])


def _gemini(url: str, stream: bool, history: list[Any], text: str) -> Turn:
    contents = [*history, {"role": "user", "parts": [{"text": text}]}]
    body = {"contents": contents, "generationConfig": {"thinkingConfig": {"thinkingBudget": 256}}}
    headers = {"x-goog-api-key": "k"}
    if stream:
        parts: list[Any] = []
        with httpx.stream(
            "POST",
            f"{url}/v1beta/models/m1:streamGenerateContent?alt=sse",
            json=body,
            headers=headers,
            timeout=30,
        ) as r:
            assert r.status_code == 200, r.read()
            for line in r.iter_lines():
                if line.startswith("data:"):
                    chunk = json.loads(line[5:])
                    for cand in chunk.get("candidates") or []:
                        parts += (cand.get("content") or {}).get("parts") or []
            got = r.headers
        content = {"role": "model", "parts": parts}  # a client keeps every streamed part of the answer
    else:
        resp = httpx.post(f"{url}/v1beta/models/m1:generateContent", json=body, headers=headers, timeout=30)
        assert resp.status_code == 200, resp.text
        content, got = resp.json()["candidates"][0]["content"], resp.headers
    assert any(p.get("thought") for p in content["parts"]), content
    return _turn("gemini", stream, contents, got, [contents[-1], content])


def _turn(client: str, stream: bool, history: list[Any], headers: Any, reply: list[Any]) -> Turn:
    return Turn(
        n=0,
        client=client,
        stream=stream,
        history=history,
        route=headers["x-modelpool-route"],
        dropped=headers.get("x-modelpool-dropped", ""),
        reply=reply,
    )


_CLIENTS = {"anthropic": _anthropic, "responses": _responses, "gemini": _gemini}
