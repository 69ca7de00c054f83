"""The google-genai SDK pointed at modelpool (issue #27): text, streaming, thinking, function-calling round
trips, count tokens and the model list on every route kind — a `gemini` route (native), a chat-only route
and an Anthropic-only route — and the OpenAI and Anthropic SDKs on a gemini-only pool.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import orjson
import pytest
from google import genai
from google.genai import errors, types

from gateway_server import GatewayServer
from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider
from modelpool.sim.spec import Fault

KEY = "mp-gemini-sdk-key"
ROUTES = {"gem": "gemini", "chat": "openai", "anth": "anthropic"}
WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city",
    "parameters_json_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}


@pytest.fixture(scope="module")
def ft() -> Iterator[FleetThread]:
    def model() -> SimModel:
        return SimModel("m1", reasoning_tokens=3, output_tokens=6, context_window=50_000)

    fast: dict[str, Any] = {"ttft": 0.001, "tps": 5000.0}
    spec = FleetSpec(
        [
            SimProvider("gem", kind="gemini", models=[model()], **fast),
            SimProvider("chat", kind="openai", models=[model()], **fast),
            SimProvider("anth", kind="anthropic", models=[model()], **fast),
        ]
    )
    with FleetThread(spec) as fleet:
        yield fleet


@pytest.fixture(scope="module", params=list(ROUTES))
def served(request: pytest.FixtureRequest, ft: FleetThread) -> Iterator[tuple[str, GatewayServer]]:
    route = request.param
    cfg = ft.to_config(providers=[route], state={"backend": "memory"}, server={"api_keys": [KEY]})
    cfg["pool"] = {"retry_backoff": "1ms", "sticky": False}
    with GatewayServer(cfg) as gw:
        yield route, gw


_KEEP: list[genai.Client] = []  # a client closes its HTTP connection pool when collected


def client(url: str, key: str = KEY) -> genai.Client:
    c = genai.Client(api_key=key, http_options=types.HttpOptions(base_url=url, api_version="v1beta"))
    _KEEP.append(c)
    return c


def upstream(ft: FleetThread, route: str) -> Any:
    calls = ft.calls(route)
    assert calls, f"no call reached {route}"
    return calls[-1]


def test_text(served: tuple[str, GatewayServer], ft: FleetThread) -> None:
    route, gw = served
    ft.reset_calls()
    r = client(gw.url).models.generate_content(model="m1", contents="Say hello")
    assert r.text is not None and r.text.startswith(f"[{route}:m1]")
    assert r.candidates and r.candidates[0].finish_reason == types.FinishReason.STOP
    usage = r.usage_metadata
    assert usage is not None and usage.prompt_token_count and usage.candidates_token_count
    assert r.sdk_http_response and r.sdk_http_response.headers
    assert r.sdk_http_response.headers["x-modelpool-route"] == f"{route}/m1"
    assert upstream(ft, route).dialect == ROUTES[route]


def test_streaming_with_thoughts(served: tuple[str, GatewayServer], ft: FleetThread) -> None:
    route, gw = served
    config = types.GenerateContentConfig(
        system_instruction="You are terse.",
        thinking_config=types.ThinkingConfig(include_thoughts=True, thinking_budget=4096),
    )
    chunks = list(client(gw.url).models.generate_content_stream(model="m1", contents="Hi", config=config))
    parts = [p for c in chunks if c.candidates for p in (c.candidates[0].content.parts or [])]
    thoughts = "".join(p.text or "" for p in parts if p.thought)
    answer = "".join(p.text or "" for p in parts if not p.thought)
    assert thoughts.strip() and answer.startswith(f"[{route}:m1]"), parts
    assert chunks[-1].candidates and chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP
    assert chunks[-1].usage_metadata and chunks[-1].usage_metadata.total_token_count
    body = upstream(ft, route).body
    if route == "chat":  # thinkingBudget 4096 → medium → the route's effort field
        assert body["reasoning_effort"] == "medium" and body["messages"][0]["role"] == "system"
    elif route == "anth":
        assert body["thinking"]["type"] == "enabled" and body["system"]


def test_thinking_off(served: tuple[str, GatewayServer], ft: FleetThread) -> None:
    _, gw = served
    config = types.GenerateContentConfig(thinking_config=types.ThinkingConfig(thinking_budget=0))
    r = client(gw.url).models.generate_content(model="m1", contents="Hi", config=config)
    parts = r.candidates[0].content.parts if r.candidates and r.candidates[0].content else []
    assert parts and not any(p.thought for p in parts)
    assert r.sdk_http_response and r.sdk_http_response.headers["x-modelpool-effort"] == "off"


@pytest.mark.parametrize("stream", [False, True])
def test_function_calling_round_trip(
    served: tuple[str, GatewayServer], ft: FleetThread, stream: bool
) -> None:
    route, gw = served
    c = client(gw.url)
    tools = [types.Tool(function_declarations=[types.FunctionDeclaration(**WEATHER)])]  # type: ignore[arg-type]
    config = types.GenerateContentConfig(tools=tools)
    question = types.Content(role="user", parts=[types.Part(text="Weather in Paris?")])
    if stream:
        chunks = list(c.models.generate_content_stream(model="m1", contents=[question], config=config))
        calls = [fc for ch in chunks for fc in ch.function_calls or []]
        content = types.Content(role="model", parts=[types.Part(function_call=fc) for fc in calls])
    else:
        r = c.models.generate_content(model="m1", contents=[question], config=config)
        calls = r.function_calls or []
        assert r.candidates and r.candidates[0].content
        content = r.candidates[0].content
    assert len(calls) == 1 and calls[0].name == "get_weather" and calls[0].id, calls
    answer = types.Part.from_function_response(name="get_weather", response={"temp": "21C"})
    answer.function_response.id = calls[0].id  # type: ignore[union-attr]
    history = [question, content, types.Content(role="user", parts=[answer])]
    final = c.models.generate_content(model="m1", contents=history, config=config)
    assert final.text and final.text.startswith(f"[{route}:m1]")
    body = upstream(ft, route).body
    if route == "chat":
        assert body["messages"][-1] == {
            "role": "tool",
            "tool_call_id": calls[0].id,
            "content": '{"temp":"21C"}',
        }
        assert body["tools"][0]["function"]["parameters"] == WEATHER["parameters_json_schema"]
    elif route == "anth":
        result = body["messages"][-1]["content"][0]
        assert result["type"] == "tool_result" and result["tool_use_id"] == calls[0].id
    else:
        part = body["contents"][-1]["parts"][0]
        assert (part.get("functionResponse") or part.get("function_response"))["id"] == calls[0].id


def test_openapi_parameters_are_carried(served: tuple[str, GatewayServer], ft: FleetThread) -> None:
    """`parameters` (Gemini's OpenAPI Schema, upper-case types) becomes JSON Schema on a translated route."""
    route, gw = served
    decl = types.FunctionDeclaration(
        name="lookup",
        parameters=types.Schema(
            type=types.Type.OBJECT, properties={"q": types.Schema(type=types.Type.STRING)}
        ),
    )
    config = types.GenerateContentConfig(tools=[types.Tool(function_declarations=[decl])])
    r = client(gw.url).models.generate_content(model="m1", contents="find x", config=config)
    assert r.function_calls and r.function_calls[0].name == "lookup"
    body = upstream(ft, route).body
    if route == "chat":
        assert body["tools"][0]["function"]["parameters"]["properties"]["q"]["type"] == "string"
    elif route == "anth":
        assert body["tools"][0]["input_schema"]["properties"]["q"]["type"] == "string"


def test_count_tokens_and_models(served: tuple[str, GatewayServer], ft: FleetThread) -> None:
    route, gw = served
    c = client(gw.url)
    ft.reset_calls()
    count = c.models.count_tokens(model="m1", contents="a fairly short sentence of text to count")
    assert count.total_tokens and count.total_tokens > 0
    headers = count.sdk_http_response.headers if count.sdk_http_response else {}
    if route == "gem":  # native first: the route's own count, the body as the SDK sent it
        assert headers["x-modelpool-route"] == "gem/m1"
        call = ft.calls("gem")[-1]
        assert call.path == "/v1beta/models/m1:countTokens" and "contents" in (call.body or {})
    else:
        assert headers["x-modelpool-estimate"] == "true" and not ft.calls(route)
    models = list(c.models.list())
    assert [m.name for m in models] == ["models/m1"]
    assert models[0].input_token_limit == 50_000 and models[0].output_token_limit
    assert "generateContent" in (models[0].supported_actions or [])
    one = c.models.get(model="m1")
    assert one.name == "models/m1"


def test_errors_are_gemini_shaped_4xx(served: tuple[str, GatewayServer]) -> None:
    _, gw = served
    with pytest.raises(errors.ClientError) as unknown:
        client(gw.url).models.generate_content(model="no-such-model", contents="hi")
    assert unknown.value.code == 404 and unknown.value.status == "NOT_FOUND"
    with pytest.raises(errors.ClientError) as bad_key:
        client(gw.url, key="wrong").models.generate_content(model="m1", contents="hi")
    assert bad_key.value.code == 401
    bad = httpx.post(
        f"{gw.url}/v1beta/models/m1:generateContent", params={"key": KEY}, json={"contents": "nope"}
    )
    assert bad.status_code == 400 and bad.json()["error"]["status"] == "INVALID_ARGUMENT"
    ok = httpx.post(
        f"{gw.url}/v1beta/models/m1:generateContent",
        headers={"authorization": f"Bearer {KEY}"},
        json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
    )
    assert ok.status_code == 200 and ok.json()["candidates"][0]["finishReason"] == "STOP"


def test_openai_and_anthropic_sdks_on_a_gemini_only_pool(ft: FleetThread) -> None:
    """A `gemini` provider speaks the OpenAI dialect at /v1beta/openai: Chat and Messages clients use it."""
    cfg = ft.to_config(providers=["gem"], state={"backend": "memory"}, server={"api_keys": [KEY]})
    with GatewayServer(cfg) as gw:
        ft.reset_calls()
        oa = openai.OpenAI(base_url=gw.url + "/v1", api_key=KEY)
        chat = oa.chat.completions.create(model="m1", messages=[{"role": "user", "content": "hi"}])
        assert (chat.choices[0].message.content or "").startswith("[gem:m1]")
        an = anthropic.Anthropic(base_url=gw.url, api_key=KEY)
        msg = an.messages.create(model="m1", max_tokens=100, messages=[{"role": "user", "content": "hi"}])
        texts = [b.text for b in msg.content if b.type == "text"]
        assert texts and texts[0].startswith("[gem:m1]"), msg.content
        paths = [c.path for c in ft.calls("gem")]
        assert paths == ["/v1beta/openai/chat/completions"] * 2, paths


@pytest.mark.parametrize(("first", "second"), [("gem", "chat"), ("chat", "gem"), ("anth", "gem")])
def test_failover_mid_walk_gives_one_gemini_stream(first: str, second: str) -> None:
    """The first route sends its reasoning and then fails (before any answer text): the walk moves to a
    route of another dialect, and the client still gets one stream: thoughts, the answer, one finishReason."""

    def provider(pid: str, kind: str, faults: list[Fault]) -> SimProvider:
        m = SimModel("m1", reasoning_tokens=2, output_tokens=4)
        return SimProvider(pid, kind=kind, models=[m], ttft=0.001, tps=5000.0, faults=faults)  # type: ignore[arg-type]

    kinds = {"gem": "gemini", "chat": "openai", "anth": "anthropic"}
    broken = [Fault(kind="error_event", after_tokens=0)]
    spec = FleetSpec([provider(first, kinds[first], broken), provider(second, kinds[second], [])])
    with FleetThread(spec) as fleet:
        cfg = fleet.to_config(state={"backend": "memory"}, server={"api_keys": [KEY]})
        cfg["pool"] = {"retry_backoff": "1ms", "retries_per_route": 0, "sticky": False}
        with GatewayServer(cfg) as gw:
            config = types.GenerateContentConfig(thinking_config=types.ThinkingConfig(include_thoughts=True))
            chunks = list(
                client(gw.url).models.generate_content_stream(model="m1", contents="Hi", config=config)
            )
        assert fleet.calls(first) and fleet.calls(second)
    parts = [p for c in chunks if c.candidates for p in (c.candidates[0].content.parts or [])]
    answer = "".join(p.text or "" for p in parts if not p.thought)
    assert answer.startswith(f"[{second}:m1]"), parts
    assert f"[{first}:" not in answer
    finishes = [
        c.candidates[0].finish_reason for c in chunks if c.candidates and c.candidates[0].finish_reason
    ]
    assert finishes == [types.FinishReason.STOP]


def test_hosted_tools_are_left_out_and_named(ft: FleetThread) -> None:
    """googleSearch / codeExecution cannot run on a chat route: left out of the request, named."""
    server = {"api_keys": [KEY], "admin_token": "tok"}
    cfg = ft.to_config(providers=["chat"], state={"backend": "memory"}, server=server)
    with GatewayServer(cfg) as gw:
        ft.reset_calls()
        tools = [
            types.Tool(function_declarations=[types.FunctionDeclaration(**WEATHER)]),  # type: ignore[arg-type]
            types.Tool(google_search=types.GoogleSearch()),
            types.Tool(code_execution=types.ToolCodeExecution()),
        ]
        r = client(gw.url).models.generate_content(
            model="m1", contents="hi", config=types.GenerateContentConfig(tools=tools)
        )
        metrics = httpx.get(gw.url + "/metrics", headers={"authorization": "Bearer tok"}).text
    assert r.sdk_http_response and r.sdk_http_response.headers
    dropped = r.sdk_http_response.headers["x-modelpool-dropped"].split(", ")
    assert {"googleSearch", "codeExecution"} <= set(dropped), dropped
    sent = ft.calls("chat")[-1].body
    assert [t["function"]["name"] for t in sent["tools"]] == ["get_weather"]
    assert 'modelpool_translation_dropped_total{field="googleSearch"} 1.0' in metrics, metrics[-2000:]

    # `lossy_translation: refuse`: the hosted tool is a 400 in Gemini's shape, before any upstream call
    cfg["pool"] = {"lossy_translation": "refuse"}
    with GatewayServer(cfg) as gw:
        ft.reset_calls()
        with pytest.raises(errors.ClientError) as err:
            client(gw.url).models.generate_content(
                model="m1", contents="hi", config=types.GenerateContentConfig(tools=tools)
            )
    assert err.value.code == 400 and "googleSearch" in str(err.value.message)
    assert ft.calls("chat") == []


def test_keys_limits_and_usage_count_gemini_calls(ft: FleetThread) -> None:
    """A key's limits refuse in Gemini's shape (429 RESOURCE_EXHAUSTED); usage counts the calls by key."""
    keys = [{"key": "sk-gem-rpm", "name": "gem-rpm", "rpm": 2}]
    cfg = ft.to_config(
        providers=["gem"], state={"backend": "memory"}, server={"api_keys": keys, "admin_token": "tok"}
    )
    with GatewayServer(cfg) as gw:
        c = client(gw.url, key="sk-gem-rpm")
        c.models.generate_content(model="m1", contents="one")
        list(c.models.generate_content_stream(model="m1", contents="two"))
        with pytest.raises(errors.ClientError) as err:
            c.models.generate_content(model="m1", contents="three")
        assert err.value.code == 429 and err.value.status == "RESOURCE_EXHAUSTED"
        assert "rpm 2" in str(err.value.details)
        report = httpx.get(
            gw.url + "/admin/usage?group_by=key", headers={"authorization": "Bearer tok"}
        ).json()
    row = next(r for r in report["rows"] if r["key"] == "gem-rpm")
    assert row["calls"] == 2, row
    assert "sk-gem-rpm" not in str(report)


def test_a_gemini_routes_4xx_reaches_the_client_unchanged() -> None:
    """Native: the route's own 400 (the request's fault) comes back with its body as it was."""
    broken = [Fault(kind="unsupported", message="Function calling config is invalid for this model.")]
    spec = FleetSpec([SimProvider("gem", kind="gemini", models=[SimModel("m1")], ttft=0.001, faults=broken)])
    with FleetThread(spec) as fleet:
        cfg = fleet.to_config(state={"backend": "memory"}, server={"api_keys": [KEY]})
        cfg["pool"] = {"retry_backoff": "1ms"}
        with GatewayServer(cfg) as gw:
            resp = httpx.post(
                f"{gw.url}/v1beta/models/m1:streamGenerateContent?alt=sse",
                headers={"x-goog-api-key": KEY},
                json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
            )
    assert resp.status_code == 400
    assert resp.json() == {
        "error": {
            "code": 400,
            "message": "Function calling config is invalid for this model.",
            "status": "INVALID_ARGUMENT",
        }
    }


def test_other_clients_on_a_route_that_speaks_only_the_gemini_api() -> None:
    """`dialects: [gemini]`: Chat, Messages and Responses clients are translated to the Gemini API (their
    streams, tool calls with ids, reasoning, usage), the function call coming back to them by its id."""
    m = SimModel("m1", reasoning_tokens=2, output_tokens=4)
    spec = FleetSpec([SimProvider("gem", kind="gemini", dialects=("gemini",), models=[m], ttft=0.001)])
    with FleetThread(spec) as fleet:
        cfg = fleet.to_config(state={"backend": "memory"}, server={"api_keys": [KEY]})
        with GatewayServer(cfg) as gw:
            oa = openai.OpenAI(base_url=gw.url + "/v1", api_key=KEY, max_retries=0)
            hi = [{"role": "user", "content": "hi"}]
            chat = oa.chat.completions.create(model="m1", messages=hi, reasoning_effort="low")  # type: ignore[arg-type]
            assert (chat.choices[0].message.content or "").startswith("[gem:m1]")
            assert chat.usage and chat.usage.completion_tokens == 6
            sent = fleet.calls("gem")[-1]
            assert sent.path == "/v1beta/models/m1:generateContent" and sent.body["contents"] == [
                {"role": "user", "parts": [{"text": "hi"}]}
            ]
            assert sent.body["generationConfig"]["thinkingConfig"] == {
                "includeThoughts": True,
                "thinkingBudget": 2048,
            }
            stream = oa.chat.completions.create(model="m1", messages=hi, stream=True)  # type: ignore[arg-type]
            text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
            assert text.startswith("[gem:m1]") and fleet.calls("gem")[-1].query == "alt=sse"
            tool = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}
            first = oa.chat.completions.create(model="m1", messages=hi, tools=[tool])  # type: ignore[arg-type,list-item]
            calls = first.choices[0].message.tool_calls or []
            assert first.choices[0].finish_reason == "tool_calls" and len(calls) == 1
            history = [
                *hi,
                {"role": "assistant", "content": None, "tool_calls": [calls[0].model_dump()]},
                {"role": "tool", "tool_call_id": calls[0].id, "content": "found"},
            ]
            oa.chat.completions.create(model="m1", messages=history, tools=[tool])  # type: ignore[arg-type,list-item]
            parts = fleet.calls("gem")[-1].body["contents"]
            assert parts[1]["parts"][0]["functionCall"]["id"] == calls[0].id
            assert parts[2]["parts"][0]["functionResponse"] == {
                "id": calls[0].id,
                "name": "lookup",
                "response": {"output": "found"},
            }
            an = anthropic.Anthropic(base_url=gw.url, api_key=KEY, max_retries=0)
            with an.messages.stream(model="m1", max_tokens=100, messages=hi) as s:  # type: ignore[arg-type]
                assert "".join(s.text_stream).startswith("[gem:m1]")
            resp = oa.responses.create(model="m1", input="hi")
            assert resp.output_text.startswith("[gem:m1]")


@pytest.mark.parametrize("native", [True, False])
def test_a_hedge_wins_over_a_stalled_first_route(native: bool) -> None:
    """Hedged first token (SPEC §3.7) for a Gemini client: native gemini routes and translated chat ones."""
    kind = "gemini" if native else "openai"
    stall = [Fault("stall", delay=4.0)]
    m = SimModel("m1", output_tokens=6)
    spec = FleetSpec(
        [
            SimProvider("alpha", kind=kind, models=[m], ttft=0.005, faults=stall),  # type: ignore[arg-type]
            SimProvider("beta", kind=kind, models=[m], ttft=0.005),  # type: ignore[arg-type]
        ]
    )
    with FleetThread(spec) as fleet:
        cfg = fleet.to_config(state={"backend": "memory"}, server={"api_keys": [KEY]})
        cfg["pool"] = {
            "strategy": "priority",
            "retry_backoff": "1ms",
            "hedge": {"enabled": True, "after": "300ms", "budget": "100%"},
        }
        with GatewayServer(cfg) as gw:
            t0 = time.monotonic()
            chunks = list(client(gw.url).models.generate_content_stream(model="m1", contents="Hi"))
            elapsed = time.monotonic() - t0
            headers = chunks[0].sdk_http_response.headers if chunks[0].sdk_http_response else {}
    assert elapsed < 3.0  # beta answered long before alpha's stall would have ended
    assert headers["x-modelpool-hedged"] == "alpha/m1 → beta/m1"
    text = "".join(c.text or "" for c in chunks)
    assert text.startswith("[beta:m1]")


MALFORMED: list[Any] = [
    {"contents": [{"parts": [{"text": 5}]}]},
    {"contents": [{"role": "model", "parts": [{"functionCall": "x"}]}]},
    {"contents": [{"role": "model", "parts": [{"functionCall": {"name": 3, "args": [1]}}]}]},
    {"contents": [{"parts": [{"functionResponse": {"name": None, "response": "x"}}]}]},
    {"contents": [{"parts": [{"inlineData": {"mimeType": 5, "data": None}}]}]},
    {"contents": [{"parts": [{"text": "x"}]}], "tools": [{"functionDeclarations": "x"}]},
    {
        "contents": [{"parts": [{"text": "x"}]}],
        "generationConfig": {"thinkingConfig": {"thinkingBudget": "lots"}},
    },
    {"contents": [{"parts": [{"text": "x"}]}], "toolConfig": {"functionCallingConfig": {"mode": 3}}},
    {"contents": [{"parts": [{"text": "x"}]}], "systemInstruction": {"parts": "x"}},
    [1, 2],
    {"contents": "x"},
    {},
]


def test_malformed_bodies_never_get_a_5xx(served: tuple[str, GatewayServer]) -> None:
    """Gemini CLI retries 5xx for minutes: whatever the body, the answer is a 200 or a Gemini-shaped 4xx."""
    _, gw = served
    for body in MALFORMED:
        for method in ("generateContent", "streamGenerateContent?alt=sse", "countTokens"):
            resp = httpx.post(
                f"{gw.url}/v1beta/models/m1:{method}",
                content=orjson.dumps(body),
                headers={"x-goog-api-key": KEY},
            )
            assert resp.status_code < 500, (body, method, resp.text[:300])
            if resp.status_code >= 400:
                assert resp.json()["error"]["status"] in ("INVALID_ARGUMENT", "NOT_FOUND"), resp.text
