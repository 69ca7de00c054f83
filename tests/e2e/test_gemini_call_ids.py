"""`functionCall.id` end to end through the server (issue #27 audit, gap 2).

A Gemini client on a chat-only and on an Anthropic-only route whose model calls one function twice at once:
the two calls reach the client with the route's own ids, distinct; the client sends the results back with
the ids echoed plain, rewritten `<name>__<id>` as Gemini CLI 0.61.0 does (calls and results), rewritten on
the results only, or not at all — and in another order than the calls. The route must get each result
paired with the call it answers.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from gateway_server import GatewayServer
from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider

KEY = "mp-gemini-ids-key"
QUESTION = {"role": "user", "parts": [{"text": "Look up a and b"}]}
TOOLS = [{"functionDeclarations": [{"name": "lookup", "parametersJsonSchema": {"type": "object"}}]}]


@pytest.fixture(scope="module")
def ft() -> Iterator[FleetThread]:
    model = SimModel("m1", parallel_calls=2, output_tokens=4)
    fast: dict[str, Any] = {"ttft": 0.001, "tps": 5000.0}
    spec = FleetSpec(
        [
            SimProvider("chat", kind="openai", models=[model], **fast),
            SimProvider("anth", kind="anthropic", models=[model], **fast),
        ]
    )
    with FleetThread(spec) as fleet:
        yield fleet


@pytest.fixture(scope="module", params=["chat", "anth"])
def served(request: pytest.FixtureRequest, ft: FleetThread) -> Iterator[tuple[str, GatewayServer]]:
    cfg = ft.to_config(providers=[request.param], state={"backend": "memory"}, server={"api_keys": [KEY]})
    cfg["pool"] = {"retry_backoff": "1ms", "sticky": False}
    with GatewayServer(cfg) as gw:
        yield request.param, gw


def generate(gw: GatewayServer, contents: list[dict[str, Any]], stream: bool) -> list[dict[str, Any]]:
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    resp = httpx.post(
        f"{gw.url}/v1beta/models/m1:{method}",
        headers={"x-goog-api-key": KEY},
        json={"contents": contents, "tools": TOOLS},
        timeout=30,
    )
    assert resp.status_code == 200, resp.text
    if not stream:
        return [resp.json()]
    return [orjson.loads(line[6:]) for line in resp.text.splitlines() if line.startswith("data: ")]


def echoed(call_id: str, style: str, where: str) -> str | None:
    """The id as the client sends it back in the model turn (`where="call"`) or with the result."""
    if style == "none":
        return None
    if style == "rewritten" or (style == "results-rewritten" and where == "result"):
        return f"lookup__{call_id}"
    return call_id


def upstream_pairs(ft: FleetThread, route: str) -> tuple[list[str], dict[str, str]]:
    """What the route got last: the ids of the assistant's calls, and each result's id → its content."""
    messages = ft.calls(route)[-1].body["messages"]
    if route == "chat":
        calls = [tc["id"] for m in messages for tc in m.get("tool_calls") or []]
        results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
        return calls, results
    blocks = [b for m in messages if isinstance(m["content"], list) for b in m["content"]]
    calls = [b["id"] for b in blocks if b["type"] == "tool_use"]
    results = {}
    for b in blocks:
        if b["type"] == "tool_result":
            content = b["content"]
            results[b["tool_use_id"]] = content if isinstance(content, str) else content[0]["text"]
    return calls, results


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("style", ["plain", "rewritten", "results-rewritten", "none"])
def test_parallel_calls_of_one_function_come_back_paired(
    served: tuple[str, GatewayServer], ft: FleetThread, style: str, stream: bool
) -> None:
    route, gw = served
    objs = generate(gw, [QUESTION], stream)
    calls = [
        p["functionCall"] for o in objs for p in o["candidates"][0]["content"]["parts"] if "functionCall" in p
    ]
    ids = [c["id"] for c in calls]
    prefix = "call_" if route == "chat" else "toolu_"
    assert len(ids) == 2 and len(set(ids)) == 2 and all(i.startswith(prefix) for i in ids), calls
    assert [c["name"] for c in calls] == ["lookup", "lookup"]

    model_turn = []
    for call in calls:
        fc = {"name": "lookup", "args": call["args"]}
        if echoed(call["id"], style, "call") is not None:
            fc["id"] = echoed(call["id"], style, "call")
        model_turn.append({"functionCall": fc, "thoughtSignature": "skip_thought_signature_validator"})
    answers = []
    for n, call in enumerate(calls):
        fr: dict[str, Any] = {"name": "lookup", "response": {"answer": f"result {n}"}}
        if echoed(call["id"], style, "result") is not None:
            fr["id"] = echoed(call["id"], style, "result")
        answers.append({"functionResponse": fr})
    if style != "none":  # with ids, results pair by id whatever their order; without, by order
        answers.reverse()
    contents = [QUESTION, {"role": "model", "parts": model_turn}, {"role": "user", "parts": answers}]
    final = generate(gw, contents, stream)
    text = "".join(p.get("text", "") for o in final for p in o["candidates"][0]["content"]["parts"])
    assert text.startswith(f"[{route}:m1]")

    sent_calls, results = upstream_pairs(ft, route)
    assert len(set(sent_calls)) == 2 and set(results) == set(sent_calls), (sent_calls, results)
    if style != "none":
        assert sent_calls == ids  # the route's own ids, whatever the client did to them
    for n, call_id in enumerate(sent_calls):
        assert orjson.loads(results[call_id]) == {"answer": f"result {n}"}, (call_id, results)
