"""Gemini calls in the books like any other (issue #27 audit, gap 3): cost, session history, Usage API,
budgets — native (a `gemini` route) and translated (a chat route), streamed and not, through the server.

Each call's cost is the usage its reply reports × its route's configured prices (cached input at its own
price, thoughts as output); the same numbers reach the call's entry in `GET /admin/sessions/{id}`, the
session's totals and `GET /admin/usage` by route and by key. A key's budget reserves a Gemini call's
output cap from its `generationConfig.maxOutputTokens`, as it does a Chat call's `max_tokens`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from google import genai
from google.genai import errors, types

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider

KEY, TIGHT = "sk-gemini-books", "sk-gemini-tight"
POOLS = {"gem": "g1", "chat": "c1"}  # one pool per route: g1 is native, c1 translated
PRICES = {
    "gem": {"input": 2.0, "cached_input": 0.5, "output": 8.0},
    "chat": {"input": 1.0, "cached_input": 0.25, "output": 4.0},
}
ADMIN = {"authorization": f"Bearer {ADMIN_TOKEN}"}


@pytest.fixture(scope="module")
def gw() -> Iterator[GatewayServer]:
    fast: dict[str, Any] = {"ttft": 0.001, "tps": 5000.0}
    spec = FleetSpec(
        [
            SimProvider("gem", kind="gemini", dialects=("gemini",), models=[model("g1")], **fast),
            SimProvider("chat", kind="openai", models=[model("c1")], **fast),
        ]
    )
    for provider in spec.providers:
        provider.prices = PRICES[provider.id]
    keys = [
        {"key": KEY, "name": "gemini-team", "budget": {"usd": 5, "per": "day"}},
        # 1024 output tokens (the default reservation) at $8/M would pass it; 16 do not.
        {"key": TIGHT, "name": "tight", "budget": {"usd": 0.001, "per": "day"}},
    ]
    server = {"api_keys": keys, "admin_token": ADMIN_TOKEN}
    with FleetThread(spec) as fleet:
        cfg = fleet.to_config(state={"backend": "memory"}, server=server)
        cfg["prices"] = {"source": "off"}
        cfg["pool"] = {"retry_backoff": "1ms"}
        with GatewayServer(cfg) as gateway:
            yield gateway


def model(name: str) -> SimModel:
    return SimModel(name, reasoning_tokens=3, output_tokens=6, cached_tokens=2)


def generate(gw: GatewayServer, route: str, stream: bool, contents: list[dict[str, Any]]) -> dict[str, Any]:
    """One Gemini call to `route`'s pool: its request id, usageMetadata and `modelpool` metadata."""
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    resp = httpx.post(
        f"{gw.url}/v1beta/models/{POOLS[route]}:{method}",
        headers={"x-goog-api-key": KEY},
        json={"contents": contents, "generationConfig": {"thinkingConfig": {"includeThoughts": True}}},
        timeout=30,
    )
    assert resp.status_code == 200, resp.text
    if stream:
        objs = [orjson.loads(line[6:]) for line in resp.text.splitlines() if line.startswith("data: ")]
        last = objs[-1]
        text = "".join(p.get("text", "") for o in objs for p in o["candidates"][0]["content"]["parts"])
    else:
        last = resp.json()
        assert float(resp.headers["x-modelpool-cost"]) == pytest.approx(last["modelpool"]["cost"])
        text = "".join(p.get("text", "") for p in last["candidates"][0]["content"]["parts"])
    assert f"[{route}:{POOLS[route]}]" in text
    return {"id": resp.headers["x-request-id"], "usage": last["usageMetadata"], "meta": last["modelpool"]}


def expected(route: str, usage: dict[str, Any]) -> dict[str, Any]:
    """What the books should say for a reply's usageMetadata on `route`."""
    price = PRICES[route]
    prompt, cached = usage["promptTokenCount"], usage.get("cachedContentTokenCount", 0)
    out = usage["candidatesTokenCount"] + usage.get("thoughtsTokenCount", 0)
    cost = ((prompt - cached) * price["input"] + cached * price["cached_input"] + out * price["output"]) / 1e6
    return {"tokens_in": prompt, "tokens_cached": cached, "tokens_out": out, "cost_usd": cost}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


def session_calls(gw: GatewayServer, count: int) -> dict[str, tuple[str, dict[str, Any]]]:
    """request id → (session id, its call entry), once the history book holds `count` calls (it is
    written by a background task every 0.5 s)."""
    deadline = time.monotonic() + 10
    while True:
        found: dict[str, tuple[str, dict[str, Any]]] = {}
        for s in httpx.get(f"{gw.url}/admin/sessions", headers=ADMIN).json()["sessions"]:
            detail = httpx.get(f"{gw.url}/admin/sessions/{s['session']}", headers=ADMIN).json()
            found |= {c["request_id"]: (s["session"], c) for c in detail["calls"]}
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def test_gemini_calls_are_priced_and_booked_like_any_other(gw: GatewayServer) -> None:
    calls = []
    for route in ("gem", "chat"):
        for stream in (True, False):
            first = user(f"books {route} {'stream' if stream else 'once'}")
            call = generate(gw, route, stream, [first])
            calls.append((route, stream, call))
            if stream:  # a second turn of the same conversation: the same session
                history = [first, {"role": "model", "parts": [{"text": "ok"}]}, user("and again")]
                calls.append((route, stream, generate(gw, route, stream, history)))
    for route, _, call in calls:
        want = expected(route, call["usage"])
        assert call["meta"]["route"] == f"{route}/{POOLS[route]}"
        assert call["meta"]["cost"] == pytest.approx(want["cost_usd"], rel=1e-6), (route, call)

    booked = session_calls(gw, len(calls))
    sessions: dict[str, list[dict[str, Any]]] = {}
    for route, stream, call in calls:
        sid, entry = booked[call["id"]]
        sessions.setdefault(sid, []).append(entry)
        want = expected(route, call["usage"])
        assert entry["dialect"] == "gemini" and entry["stream"] is stream and entry["outcome"] == "ok"
        assert entry["route"] == f"{route}/{POOLS[route]}" and entry["pool"] == POOLS[route]
        for field in ("tokens_in", "tokens_cached", "tokens_out"):
            assert entry[field] == want[field], (field, route, stream, entry)
        assert entry["cost_usd"] == pytest.approx(want["cost_usd"], rel=1e-6)
    assert sorted(len(v) for v in sessions.values()) == [1, 1, 2, 2]  # the two-turn conversations
    for sid, entries in sessions.items():
        summary = httpx.get(f"{gw.url}/admin/sessions/{sid}", headers=ADMIN).json()["summary"]
        assert summary["calls"] == len(entries)
        assert summary["tokens_in"] == sum(e["tokens_in"] for e in entries)
        assert summary["tokens_out"] == sum(e["tokens_out"] for e in entries)
        assert summary["cost_usd"] == pytest.approx(sum(e["cost_usd"] for e in entries), rel=1e-6)

    by_route = httpx.get(f"{gw.url}/admin/usage?group_by=route", headers=ADMIN).json()
    for route in ("gem", "chat"):
        row = next(r for r in by_route["rows"] if r["route"] == f"{route}/{POOLS[route]}")
        mine = [expected(route, c["usage"]) for r, _, c in calls if r == route]
        assert row["calls"] == len(mine) == 3 and row["estimated"] == 0
        for field in ("tokens_in", "tokens_cached", "tokens_out"):
            assert row[field] == sum(m[field] for m in mine), (field, row)
        assert row["cost_usd"] == pytest.approx(sum(m["cost_usd"] for m in mine), rel=1e-6)
    by_key = httpx.get(f"{gw.url}/admin/usage?group_by=key", headers=ADMIN).json()
    team = next(r for r in by_key["rows"] if r["key"] == "gemini-team")
    assert team["calls"] == len(calls)
    assert team["cost_usd"] == pytest.approx(sum(c["meta"]["cost"] for _, _, c in calls), rel=1e-6)
    assert KEY not in str(by_key)


def test_a_budget_reserves_the_gemini_output_cap(gw: GatewayServer) -> None:
    """The `tight` key's $0.001 cannot hold 1024 output tokens at $8/M, but can hold 16: a Gemini call
    that says `maxOutputTokens: 16` (camelCase raw, snake_case from the SDK) is admitted, as a Chat call
    with `max_tokens: 16` is; one that names no cap is refused in Gemini's shape, before any upstream call."""
    body = {"contents": [user("hi")], "generationConfig": {"maxOutputTokens": 16}}
    url = f"{gw.url}/v1beta/models/g1:generateContent"
    capped = httpx.post(url, headers={"x-goog-api-key": TIGHT}, json=body, timeout=30)
    assert capped.status_code == 200, capped.text
    client = genai.Client(
        api_key=TIGHT, http_options=types.HttpOptions(base_url=gw.url, api_version="v1beta")
    )
    config = types.GenerateContentConfig(max_output_tokens=16)
    assert client.models.generate_content(model="g1", contents="hi", config=config).text
    chat = httpx.post(
        f"{gw.url}/v1/chat/completions",
        headers={"authorization": f"Bearer {TIGHT}"},
        json={"model": "g1", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]},
        timeout=30,
    )
    assert chat.status_code == 200, chat.text
    with pytest.raises(errors.ClientError) as refused:
        client.models.generate_content(model="g1", contents="hi")
    assert refused.value.code == 429 and refused.value.status == "RESOURCE_EXHAUSTED"
    assert "budget" in str(refused.value.message)
