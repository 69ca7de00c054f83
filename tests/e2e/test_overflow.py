"""Context overflow in each dialect's own words, through the real server and the official SDKs (issue #30).

A request too long for every route a call may reach is refused at once, with no upstream attempt, in the
words the agent CLIs act on (Claude Code compacts on "prompt is too long"; Codex reads OpenAI's
`context_length_exceeded`). An upstream's own overflow 400 — here llama-server's wording — reaches the
client in the same words, on a native attempt and on a translated one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import Fault, FleetSpec, FleetThread, SimModel, SimProvider

KEY = "mp-overflow-key"
WINDOW = 2048
LLAMA = "request (3031 tokens) exceeds the available context size (2048 tokens)"
DIALECTS = {"anth": ("anthropic",), "chat": ("openai",), "resp": ("openai", "responses")}
LONG = "word " * 20_000  # ~25,000 tokens by modelpool's estimate: far over 2048
SHORT = "Say hello."


def fleet() -> FleetSpec:
    def models() -> list[SimModel]:
        return [
            SimModel("deepseek-small", context_window=WINDOW, output_tokens=4),
            SimModel("deepseek-big", context_window=8192, output_tokens=4),
            SimModel("open-window", output_tokens=4),  # no declared window: never refused for size
        ]

    return FleetSpec(
        [
            SimProvider(p, kind="anthropic" if p == "anth" else "openai", dialects=d, models=models())
            for p, d in DIALECTS.items()
        ]
    )


@pytest.fixture(scope="module")
def ft() -> Iterator[FleetThread]:
    with FleetThread(fleet()) as f:
        yield f


def config(ft: FleetThread, routes: list[str], **pool: Any) -> dict[str, Any]:
    cfg = ft.to_config(
        providers=routes, state={"backend": "memory"}, server={"admin_token": ADMIN_TOKEN, "api_keys": [KEY]}
    )
    for p in cfg["providers"]:
        p["dialects"] = list(DIALECTS[p["id"]])
    cfg["pool"] = {"retry_backoff": "1ms", "sticky": False, "max_attempts": 3, **pool}
    return cfg


def clients(url: str) -> tuple[anthropic.Anthropic, openai.OpenAI]:
    return (
        anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0),
        openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0),
    )


def ask(url: str, dialect: str, model: str, text: str, stream: bool = False) -> Any:
    an, oa = clients(url)
    if dialect == "anthropic":
        if stream:
            with an.messages.stream(
                model=model, max_tokens=64, messages=[{"role": "user", "content": text}]
            ) as s:
                return s.get_final_message()
        return an.messages.create(model=model, max_tokens=64, messages=[{"role": "user", "content": text}])
    if dialect == "openai":
        return oa.chat.completions.create(
            model=model, messages=[{"role": "user", "content": text}], stream=stream
        )
    return oa.responses.create(model=model, input=text, stream=stream)


def all_calls(ft: FleetThread) -> int:
    return sum(len(ft.calls(p)) for p in DIALECTS)


@pytest.mark.parametrize("stream", [False, True], ids=["once", "stream"])
def test_a_prompt_over_every_window_is_refused_in_each_dialect(ft: FleetThread, stream: bool) -> None:
    ft.reset_calls()
    with GatewayServer(config(ft, ["anth", "chat", "resp"])) as gw:
        with pytest.raises(anthropic.BadRequestError) as an_err:
            ask(gw.url, "anthropic", "deepseek-small", LONG, stream)
        with pytest.raises(openai.BadRequestError) as chat_err:
            ask(gw.url, "openai", "deepseek-small", LONG, stream)
        with pytest.raises(openai.BadRequestError) as resp_err:
            ask(gw.url, "responses", "deepseek-small", LONG, stream)
        assert ask(gw.url, "anthropic", "deepseek-small", SHORT, stream) is not None  # one that fits goes
    body = an_err.value.body
    assert isinstance(body, dict) and body["error"]["type"] == "invalid_request_error"
    message = body["error"]["message"]
    assert message.startswith("prompt is too long: ") and message.endswith(f" tokens > {WINDOW} maximum")
    assert int(message.split()[4]) > WINDOW
    for err, param in ((chat_err.value, "messages"), (resp_err.value, "input")):
        assert err.status_code == 400 and err.code == "context_length_exceeded", err.body
        assert f"maximum context length is {WINDOW} tokens" in err.message and err.param == param
    assert all_calls(ft) == 1  # only the prompt that fits reached an upstream


def test_a_prompt_a_fallback_pool_can_hold_is_not_refused(ft: FleetThread) -> None:
    """With `model_fallback: same-family` the walk may reach `deepseek-big` (8192): the refusal is against
    the largest window of the chain, the window a client must size to is the smallest."""
    ft.reset_calls()
    cfg = config(ft, ["chat"], model_fallback="same-family")
    medium = "word " * 4000  # ~5,000 tokens: over 2048, under 8192
    with GatewayServer(cfg) as gw:
        rows = {
            r["id"]: r
            for r in httpx.get(gw.url + "/v1/models", headers={"authorization": f"Bearer {KEY}"}).json()[
                "data"
            ]
        }
        reply = ask(gw.url, "openai", "deepseek-small", medium)
        with pytest.raises(openai.BadRequestError) as err:
            ask(gw.url, "openai", "deepseek-small", LONG)
    assert rows["deepseek-small"]["context_window"] == WINDOW
    assert rows["deepseek-small"]["agent_context_window"] == WINDOW
    assert rows["deepseek-big"]["agent_context_window"] == WINDOW  # its chain holds deepseek-small
    assert reply.choices[0].message.content
    assert "maximum context length is 8192 tokens" in err.value.message


def test_a_pool_with_an_unknown_window_never_refuses_for_size(ft: FleetThread) -> None:
    ft.reset_calls()
    with GatewayServer(config(ft, ["anth"])) as gw:
        reply = ask(gw.url, "anthropic", "open-window", LONG)
    assert reply.content and len(ft.calls("anth")) == 1


@pytest.mark.parametrize("route", ["anth", "chat"], ids=["native", "translated"])
def test_an_upstream_overflow_reaches_an_anthropic_client_as_prompt_too_long(
    ft: FleetThread, route: str
) -> None:
    ft.reset_calls()
    ft.set_faults(route, [Fault("status", status=400, message=LLAMA)])
    try:
        with GatewayServer(config(ft, [route])) as gw:
            with pytest.raises(anthropic.BadRequestError) as err:
                ask(gw.url, "anthropic", "deepseek-small", SHORT)
            with pytest.raises(anthropic.BadRequestError) as streamed:
                ask(gw.url, "anthropic", "deepseek-small", SHORT, stream=True)
    finally:
        ft.set_faults(route, [])
    for e in (err.value, streamed.value):
        assert isinstance(e.body, dict) and e.body["error"] == {
            "type": "invalid_request_error",
            "message": "prompt is too long: 3031 tokens > 2048 maximum",
        }
    assert len(ft.calls(route)) == 2  # one attempt each: an overflow is the request's fault, not the route's


@pytest.mark.parametrize("route", ["chat", "anth"], ids=["native", "translated"])
def test_an_upstream_overflow_reaches_an_openai_client_as_context_length_exceeded(
    ft: FleetThread, route: str
) -> None:
    ft.reset_calls()
    ft.set_faults(route, [Fault("status", status=400, message=LLAMA)])
    try:
        with GatewayServer(config(ft, [route])) as gw, pytest.raises(openai.BadRequestError) as err:
            ask(gw.url, "openai", "deepseek-small", SHORT)
    finally:
        ft.set_faults(route, [])
    assert err.value.code == "context_length_exceeded"
    assert (
        "maximum context length is 2048 tokens. However, your messages resulted in 3031 tokens"
        in err.value.message
    )


def test_models_list_in_the_shapes_clients_read(ft: FleetThread) -> None:
    with GatewayServer(config(ft, ["anth", "chat"])) as gw:
        an, _ = clients(gw.url)
        page = an.models.list()
        codex = httpx.get(
            gw.url + "/v1/models?client_version=0.171.0", headers={"authorization": f"Bearer {KEY}"}
        ).json()
    rows = {m.id: m for m in page.data}
    small = rows["deepseek-small"].model_dump()
    assert small["display_name"] == "deepseek-small" and small["max_input_tokens"] == WINDOW
    assert small["type"] == "model" and "max_tokens" in small
    assert "data" in codex and "models" in codex
    entry = {m["slug"]: m for m in codex["models"]}["deepseek-small"]
    assert entry["context_window"] == WINDOW and entry["apply_patch_tool_type"] == "freeform"
    assert entry["auto_compact_token_limit"] == int(WINDOW * 0.9) and entry["base_instructions"]
    assert entry.get("tool_mode") != "code_mode_only"


def _gemini(url: str, model: str, text: str) -> httpx.Response:
    body = {"contents": [{"role": "user", "parts": [{"text": text}]}]}
    return httpx.post(
        f"{url}/v1beta/models/{model}:generateContent", json=body, headers={"x-goog-api-key": KEY}
    )


def test_a_gemini_client_gets_geminis_own_overflow_words(ft: FleetThread) -> None:
    """Over every window: refused at once; an upstream's overflow: the same words (Gemini CLI reads them)."""
    ft.reset_calls()
    with GatewayServer(config(ft, ["chat"])) as gw:
        refused = _gemini(gw.url, "deepseek-small", LONG)
    assert refused.status_code == 400 and ft.calls("chat") == []
    error = refused.json()["error"]
    assert error["status"] == "INVALID_ARGUMENT" and error["code"] == 400
    assert re.fullmatch(
        r"The input token count \(\d+\) exceeds the maximum number of tokens allowed \(2048\)\.",
        error["message"],
    )
    ft.set_faults("chat", [Fault("status", status=400, message=LLAMA)])
    try:
        with GatewayServer(config(ft, ["chat"])) as gw:
            upstream = _gemini(gw.url, "deepseek-small", SHORT)
    finally:
        ft.set_faults("chat", [])
    assert upstream.status_code == 400
    assert upstream.json()["error"]["message"] == (
        "The input token count (3031) exceeds the maximum number of tokens allowed (2048)."
    )
