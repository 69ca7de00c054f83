"""Each provider serves exactly its declared dialects; call records keep dialect, headers and raw bytes;
Anthropic's scripted extras (citations, server tools, cache usage); the aggregator in all three dialects."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import anthropic
import httpx
import orjson
import pytest
import yaml
from openai import OpenAI

from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider, demo_fleet, expected_text
from modelpool.sim.runner import write_config

GW_MODEL = "deepseek/deepseek-v4.1-flash-1017"
USER = [{"role": "user", "content": "hello"}]
WEB_SEARCH = {"type": "web_search_20250305", "name": "web_search", "max_uses": 2}

CHAT = ("/v1/chat/completions", {"model": "m1", "messages": USER})
MESSAGES = ("/v1/messages", {"model": "m1", "max_tokens": 50, "messages": USER})
RESPONSES = ("/v1/responses", {"model": "m1", "input": "hello"})
COUNT = ("/v1/messages/count_tokens", {"model": "m1", "messages": USER})


def post(fleet: FleetThread, provider: str, path: str, body: dict[str, Any], **kw: Any) -> httpx.Response:
    return httpx.post(fleet.root_url(provider) + path, json=body, timeout=10, **kw)


@pytest.mark.parametrize(
    ("provider", "served"),
    [
        ("alpha", {"/v1/chat/completions"}),  # openai kind: Chat only
        ("claude", {"/v1/messages", "/v1/messages/count_tokens"}),  # anthropic kind
        ("omni", {"/v1/chat/completions", "/v1/messages", "/v1/messages/count_tokens", "/v1/responses"}),
    ],
)
def test_only_declared_dialects_are_served(fleet: FleetThread, provider: str, served: set[str]) -> None:
    for path, body in (CHAT, MESSAGES, RESPONSES, COUNT):
        for prefix in ("", "/v1"):
            reply = post(fleet, provider, prefix + path.removeprefix("/v1"), body)
            assert (reply.status_code == 200) == (path in served), (provider, prefix + path, reply.text)
            if path not in served:
                assert reply.status_code == 404


def test_kind_defaults_and_declared_dialects() -> None:
    assert SimProvider("a").speaks == ("openai",)
    assert SimProvider("b", kind="anthropic").speaks == ("anthropic",)
    assert SimProvider("c", kind="vercel").speaks == ("openai", "anthropic", "responses")
    assert SimProvider("d", dialects=("openai", "responses")).speaks == ("openai", "responses")
    assert SimProvider("g", kind="gemini").speaks == ("gemini", "openai")
    with pytest.raises(ValueError, match="dialects"):
        SimProvider("e", dialects=("openai", "cohere"))  # type: ignore[arg-type]


def test_demo_fleet_dialects_reach_the_config(tmp_path: Path) -> None:
    speaks = {p.id: p.speaks for p in demo_fleet().providers}
    assert speaks == {
        "vercel": ("openai", "anthropic", "responses"),
        "deepseek": ("openai", "anthropic"),
        "workbuddy": ("openai",),
    }
    with FleetThread(demo_fleet()) as ft:
        write_config(ft.fleet, tmp_path / "modelpool.yaml")  # what `modelpool sim --config-out` writes
    config = yaml.safe_load((tmp_path / "modelpool.yaml").read_text())
    assert {p["id"]: p["dialects"] for p in config["providers"]} == {k: list(v) for k, v in speaks.items()}


def test_to_config_is_a_valid_modelpool_config(fleet: FleetThread) -> None:
    from modelpool.config.schema import ProviderConfig

    for entry in fleet.to_config()["providers"]:
        parsed = ProviderConfig.model_validate(entry)
        assert list(parsed.effective_dialects) == entry["dialects"]


def test_records_keep_dialect_headers_and_raw_bytes(fleet: FleetThread) -> None:
    raw = b'{"model": "m1",   "input": "hi", "x-unknown": [1, 2.50]}'  # spacing and unknown field kept
    headers = {"content-type": "application/json", "authorization": "Bearer sk-secret", "openai-beta": "b1"}
    assert (
        httpx.post(fleet.root_url("omni") + "/v1/responses", content=raw, headers=headers).status_code == 200
    )
    msg_headers = {"x-api-key": "sk-other", "anthropic-beta": "context-management-2025-06-27"}
    assert post(fleet, "omni", *MESSAGES, headers=msg_headers).status_code == 200
    first, second = fleet.calls("omni")
    assert (first.dialect, first.path, first.raw_body) == ("responses", "/v1/responses", raw)
    assert first.headers["openai-beta"] == "b1" and first.secret_headers == ["authorization"]
    assert "sk-secret" not in orjson.dumps(first.to_dict()).decode()
    assert second.dialect == "anthropic" and second.headers["anthropic-beta"].startswith("context-management")
    assert second.secret_headers == ["x-api-key"] and "x-api-key" not in second.headers
    # The control API gives the same, the raw body as base64.
    listed = httpx.get(fleet.root_url("omni") + "/_sim/calls").json()["calls"]
    assert base64.b64decode(listed[0]["raw_body_b64"]) == raw and listed[0]["dialect"] == "responses"


def test_count_tokens_where_anthropic_is_spoken(fleet: FleetThread) -> None:
    c = anthropic.Anthropic(base_url=fleet.root_url("omni"), api_key="x", max_retries=0)
    assert c.messages.count_tokens(model="m1", messages=USER).input_tokens >= 1  # type: ignore[arg-type]


# ---- Anthropic scripted extras ------------------------------------------------------------------


def anthropic_client(fleet: FleetThread, provider: str = "omni") -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=fleet.root_url(provider), api_key="x", max_retries=0, timeout=10)


def test_web_search_blocks_and_citations_stream(fleet: FleetThread) -> None:
    c = anthropic_client(fleet)
    kwargs: dict[str, Any] = {"model": "searcher", "max_tokens": 100, "messages": USER, "tools": [WEB_SEARCH]}
    with c.messages.stream(**kwargs) as stream:
        deltas = [e.delta.type for e in stream if e.type == "content_block_delta"]
        final = stream.get_final_message()
    assert "citations_delta" in deltas
    types = [b.type for b in final.content]
    assert types == ["server_tool_use", "web_search_tool_result", "text"]
    search, result, text = final.content
    assert search.type == "server_tool_use" and search.input == {"query": "searcher sim search"}
    assert result.type == "web_search_tool_result" and result.tool_use_id == search.id
    assert text.type == "text" and text.text == expected_text("omni", "searcher", 4)
    assert text.citations and text.citations[0].type == "web_search_result_location"
    assert final.usage.server_tool_use is not None and final.usage.server_tool_use.web_search_requests == 1
    non_stream = c.messages.create(**kwargs)
    assert [b.type for b in non_stream.content] == types
    # Without the tool offered, the same model answers plainly.
    plain = c.messages.create(model="searcher", max_tokens=100, messages=USER)  # type: ignore[arg-type]
    assert [b.type for b in plain.content] == ["text"]


def test_cache_usage_in_each_dialect(fleet: FleetThread) -> None:
    long_user = [{"role": "user", "content": "x" * 200}]  # 50 prompt tokens
    msg = anthropic_client(fleet).messages.create(model="cached", max_tokens=50, messages=long_user)  # type: ignore[arg-type]
    assert (msg.usage.cache_read_input_tokens, msg.usage.cache_creation_input_tokens) == (5, 7)
    assert msg.usage.input_tokens == 50 - 12  # Anthropic's input_tokens excludes cache reads and writes
    oc = OpenAI(base_url=fleet.base_url("omni"), api_key="x", max_retries=0)
    chat = oc.chat.completions.create(model="cached", messages=long_user)  # type: ignore[arg-type]
    assert chat.usage is not None and chat.usage.prompt_tokens_details is not None
    assert chat.usage.prompt_tokens_details.cached_tokens == 5 and chat.usage.prompt_tokens == 50
    resp = oc.responses.create(model="cached", input="x" * 200)
    assert resp.usage is not None and resp.usage.input_tokens_details.cached_tokens == 5


def test_signature_delta_on_thinking(fleet: FleetThread) -> None:
    body = {"model": "thinker", "max_tokens": 100, "messages": USER, "stream": True}
    raw = post(fleet, "omni", "/v1/messages", body).text
    assert '"type":"signature_delta"' in raw


# ---- the aggregator in each dialect -------------------------------------------------------------


def order(inner: list[str]) -> dict[str, Any]:
    return {"providerOptions": {"gateway": {"order": inner}}}


def test_aggregator_order_and_routing_record_in_each_dialect(fleet: FleetThread) -> None:
    gw = {"model": GW_MODEL, **order(["subconscious"])}
    # Chat: final chunk delta.provider_metadata; non-stream message.provider_metadata.
    chat = post(fleet, "vercel", "/v1/chat/completions", {**gw, "messages": USER}).json()
    routing = chat["choices"][0]["message"]["provider_metadata"]["gateway"]["routing"]
    assert routing["finalProvider"] == "subconscious"
    # Messages: message_delta.provider_metadata (stream) and the message (non-stream).
    msg_body = {**gw, "max_tokens": 50, "messages": USER}
    message = post(fleet, "vercel", "/v1/messages", msg_body).json()
    assert message["provider_metadata"]["gateway"]["routing"]["finalProvider"] == "subconscious"
    raw = post(fleet, "vercel", "/v1/messages", {**msg_body, "stream": True}).text
    delta = next(f for f in raw.split("\n\n") if f.startswith("event: message_delta"))
    meta = orjson.loads(delta.split("data: ", 1)[1])["provider_metadata"]
    assert meta["gateway"]["routing"]["finalProvider"] == "subconscious"
    # Responses: `providerMetadata` on the response object (non-stream) and on response.completed.
    resp = post(fleet, "vercel", "/v1/responses", {**gw, "input": "hello"}).json()
    assert resp["providerMetadata"]["gateway"]["routing"]["finalProvider"] == "subconscious"
    raw = post(fleet, "vercel", "/v1/responses", {**gw, "input": "hello", "stream": True}).text
    completed = orjson.loads(raw.strip().split("\n\n")[-1].split("data: ", 1)[1])
    assert completed["type"] == "response.completed"
    assert completed["response"]["providerMetadata"]["gateway"]["routing"]["finalProvider"] == "subconscious"
    assert [c.inner for c in fleet.calls("vercel")] == ["subconscious"] * 5
    dialects = [c.dialect for c in fleet.calls("vercel")]
    assert dialects == ["openai", "anthropic", "anthropic", "responses", "responses"]


def test_aggregator_default_pick_without_order_in_responses(fleet: FleetThread) -> None:
    resp = OpenAI(base_url=fleet.base_url("vercel"), api_key="x", max_retries=0).responses.create(
        model=GW_MODEL, input="hello"
    )
    assert resp.model_extra is not None
    assert resp.model_extra["providerMetadata"]["gateway"]["routing"]["finalProvider"] == "baseten"


def test_dialects_in_sim_info() -> None:
    spec = FleetSpec([SimProvider("r", dialects=("responses",), models=[SimModel("m")])])
    with FleetThread(spec) as ft:
        info = httpx.get(ft.root_url("r") + "/_sim/info").json()
        assert info["dialects"] == ["responses"]
        assert post(ft, "r", "/v1/chat/completions", {"model": "m", "messages": USER}).status_code == 404


def test_count_tokens_and_query_are_recorded(fleet: FleetThread) -> None:
    body = {"model": "m1", "messages": USER}
    assert post(fleet, "claude", "/v1/messages/count_tokens", body).json()["input_tokens"] >= 1
    assert post(fleet, "claude", "/v1/messages?beta=true", {**body, "max_tokens": 5}).status_code == 200
    counted, called = fleet.calls("claude")
    assert (counted.path, counted.dialect, counted.model) == ("/v1/messages/count_tokens", "anthropic", "m1")
    assert orjson.loads(counted.raw_body) == body
    assert (called.path, called.query) == ("/v1/messages", "beta=true")
