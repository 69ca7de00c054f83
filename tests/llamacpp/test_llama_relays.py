"""modelpool in front of a real llama-server (`kind: llamacpp`), through `modelpool serve`: the same text and
the same usage as the direct call in every dialect, native relays that send the client's own body, and
translation where a pool forces it (issue #25)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from clients.tap import Tap
from llama_server import ALIAS, LlamaServer
from llamacpp.helpers import GREEDY, PRICES, anth, chat_body, direct_chat, gateway_config, oai, wait_usage
from modelpool.protocols.sse import SSEParser
from serve_process import ServeProcess, serve_process

# A real model on 2 shared cores: a hundred streams take 15 s on a quiet machine, minutes on a loaded one.
pytestmark = pytest.mark.timeout(900)

PROMPT = "Name three colours."


@pytest.fixture(scope="module")
def gateway(llama: LlamaServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """`modelpool serve` with llama-server as its only provider, models discovered from `/v1/models`."""
    with serve_process(gateway_config(llama.provider()), tmp_path_factory.mktemp("gw")) as gw:
        yield gw


def test_discovery_reads_the_model_and_its_served_context(gateway: ServeProcess) -> None:
    models = httpx.get(gateway.url + "/v1/models", timeout=10).json()["data"]
    pool = next(m for m in models if m["id"] == ALIAS)
    assert pool["routes"] == [f"llama/{ALIAS}"]
    assert pool["context_window"] == 2048  # a slot's context (`-c 4096 -np 2`), not the training 8192


def test_chat_same_text_and_usage_as_direct(gateway: ServeProcess, llama: LlamaServer) -> None:
    text, usage = direct_chat(llama, PROMPT)
    client = oai(gateway.url)
    raw = client.chat.completions.with_raw_response.create(**chat_body(PROMPT))
    reply = raw.parse()
    assert raw.headers["x-modelpool-route"] == f"llama/{ALIAS}"
    assert reply.choices[0].message.content == text
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (usage["in"], usage["out"])

    stream = client.chat.completions.create(
        **chat_body(PROMPT), stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == text
    streamed = next(c.usage for c in chunks if c.usage)
    assert (streamed.prompt_tokens, streamed.completion_tokens) == (usage["in"], usage["out"])


def test_messages_and_responses_same_text_and_usage_as_direct(
    gateway: ServeProcess, llama: LlamaServer
) -> None:
    body: dict[str, Any] = {
        "model": ALIAS,
        "max_tokens": 24,
        "messages": [{"role": "user", "content": PROMPT}],
    }
    direct = llama.post("/v1/messages", {**body, **GREEDY}).json()
    client = anth(gateway.url)
    reply = client.messages.create(**body, extra_body=GREEDY)
    assert reply.content[0].text == direct["content"][0]["text"]
    assert reply.usage.output_tokens == direct["usage"]["output_tokens"]
    direct_in = direct["usage"]["input_tokens"] + (direct["usage"].get("cache_read_input_tokens") or 0)
    assert reply.usage.input_tokens + (reply.usage.cache_read_input_tokens or 0) == direct_in
    with client.messages.stream(**body, extra_body=GREEDY) as stream:
        assert "".join(stream.text_stream) == direct["content"][0]["text"]
        final = stream.get_final_message()
    assert final.usage.output_tokens == direct["usage"]["output_tokens"]
    # llama splits the prompt into `cache_read_input_tokens` (its prompt cache: after the direct call, all
    # but the last token) and `input_tokens` (the rest), on its stream's message_start as in its bodies: the
    # split follows its cache from call to call, the sum is the prompt.
    assert final.usage.input_tokens + (final.usage.cache_read_input_tokens or 0) == direct_in

    rbody: dict[str, Any] = {"model": ALIAS, "max_output_tokens": 24, "input": PROMPT}
    rdirect = llama.post("/v1/responses", {**rbody, **GREEDY}).json()
    rtext = rdirect["output"][0]["content"][0]["text"]
    rreply = oai(gateway.url).responses.create(**rbody, extra_body=GREEDY)
    assert rreply.output_text == rtext
    assert (rreply.usage.input_tokens, rreply.usage.output_tokens) == (
        rdirect["usage"]["input_tokens"],
        rdirect["usage"]["output_tokens"],
    )
    events = list(oai(gateway.url).responses.create(**rbody, stream=True, extra_body=GREEDY))
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == rtext
    final_r = next(e.response for e in events if e.type == "response.completed")
    assert final_r.usage is not None
    # Responses' `input_tokens` is the whole prompt (its cached part is `input_tokens_details`), streamed
    # or not.
    assert (final_r.usage.input_tokens, final_r.usage.output_tokens) == (
        rdirect["usage"]["input_tokens"],
        rdirect["usage"]["output_tokens"],
    )


def test_the_usage_book_counts_llamas_own_tokens(llama: LlamaServer, tmp_path: Path) -> None:
    """Every dialect, streamed and not: the usage API's tokens are the sums of what llama reported."""
    cfg = gateway_config(llama.provider(prices=PRICES))
    with serve_process(cfg, tmp_path) as gw:
        seen_in = seen_out = 0
        c = oai(gw.url)
        r1 = c.chat.completions.create(**chat_body("One"))
        seen_in, seen_out = seen_in + r1.usage.prompt_tokens, seen_out + r1.usage.completion_tokens
        chunks = list(
            c.chat.completions.create(**chat_body("Two"), stream=True, stream_options={"include_usage": True})
        )
        u = next(x.usage for x in chunks if x.usage)
        seen_in, seen_out = seen_in + u.prompt_tokens, seen_out + u.completion_tokens
        m = anth(gw.url).messages.create(
            model=ALIAS, max_tokens=16, messages=[{"role": "user", "content": "Three"}], extra_body=GREEDY
        )
        seen_in += m.usage.input_tokens + (m.usage.cache_read_input_tokens or 0)
        seen_out += m.usage.output_tokens
        r = c.responses.create(model=ALIAS, max_output_tokens=16, input="Four", extra_body=GREEDY)
        assert r.usage is not None
        seen_in, seen_out = seen_in + r.usage.input_tokens, seen_out + r.usage.output_tokens
        rows = wait_usage(gw.url, 4)
    assert [(row["route"], row["calls"]) for row in rows] == [(f"llama/{ALIAS}", 4)]
    assert (rows[0]["tokens_in"], rows[0]["tokens_out"]) == (seen_in, seen_out)
    assert rows[0]["cost_usd"] > 0


@pytest.fixture(scope="module")
def tapped(llama: LlamaServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Tap, str]]:
    """modelpool → tap → llama-server: the tap records what modelpool sent upstream."""
    with Tap(llama.url) as tap:
        cfg = gateway_config(llama.provider(base_url=tap.url, models=[ALIAS]))
        with serve_process(cfg, tmp_path_factory.mktemp("tapped")) as gw:
            yield tap, gw.url


def _last(tap: Tap, path: str) -> Any:
    return next(s for s in reversed(tap.sent) if s.path == path)


def test_messages_count_tokens_and_responses_are_relayed_natively(
    tapped: tuple[Tap, str], llama: LlamaServer
) -> None:
    tap, url = tapped
    body = {
        "model": ALIAS,
        "max_tokens": 16,
        "messages": [{"role": "user", "content": PROMPT}],
        "temperature": 0,
        "x_unknown_field": {"kept": True},
    }
    raw = httpx.post(
        url + "/v1/messages",
        content=httpx.Request("POST", "/", json=body).content,
        headers={"x-api-key": "k", "anthropic-version": "2023-06-01", "anthropic-beta": "test-beta-1"},
        timeout=60,
    )
    assert raw.status_code == 200, raw.text
    sent = _last(tap, "/v1/messages")
    assert sent.body == body  # the client's body, its unknown field included
    assert sent.headers["anthropic-beta"] == "test-beta-1"
    assert sent.headers["anthropic-version"] == "2023-06-01"

    count_body = {"model": ALIAS, "messages": [{"role": "user", "content": PROMPT}]}
    direct = llama.post("/v1/messages/count_tokens", count_body).json()
    counted = anth(url).messages.count_tokens(**count_body)  # type: ignore[arg-type]
    assert counted.input_tokens == direct["input_tokens"]  # llama's own count, not an estimate
    assert _last(tap, "/v1/messages/count_tokens").body == count_body

    rbody = {"model": ALIAS, "input": PROMPT, "max_output_tokens": 16, "temperature": 0}
    oai(url).responses.create(**rbody)  # type: ignore[arg-type]
    assert _last(tap, "/v1/responses").body == rbody


def test_the_sdks_responses_stream_helper_completes_on_a_native_llama_route(
    tapped: tuple[Tap, str], llama: LlamaServer
) -> None:
    """llama's Responses events carry no `sequence_number`, `output_index` or `content_index`; the SDK's
    `responses.stream()` helper indexes its snapshot with them. modelpool completes them on the native
    relay: the helper and the plain event stream both finish with llama's text, while what llama sent
    modelpool (the tap's record) was its own native stream, positions absent."""
    tap, url = tapped
    rbody: dict[str, Any] = {"model": ALIAS, "input": PROMPT, "max_output_tokens": 24}
    direct = llama.post("/v1/responses", {**rbody, **GREEDY}).json()
    want = direct["output"][0]["content"][0]["text"]

    with oai(url).responses.stream(**rbody, extra_body=GREEDY) as stream:
        deltas = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
        final = stream.get_final_response()
    assert deltas == want and final.output_text == want
    assert final.usage is not None and final.usage.output_tokens == direct["usage"]["output_tokens"]
    sent = _last(tap, "/v1/responses")
    assert sent.body == {**rbody, **GREEDY, "stream": True}  # the client's body, relayed natively
    upstream = [json.loads(ev.data) for ev in SSEParser().feed(sent.reply)]
    assert upstream[-1]["type"] == "response.completed"
    assert not [e for e in upstream if {"sequence_number", "output_index", "content_index"} & set(e)]

    events = list(oai(url).responses.create(**rbody, stream=True, extra_body=GREEDY))
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == want
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert {e.output_index for e in events if e.type == "response.output_text.delta"} == {0}
    assert {e.content_index for e in events if e.type == "response.output_text.delta"} == {0}
    assert _last(tap, "/v1/responses").body == {**rbody, **GREEDY, "stream": True}


def test_a_chat_stream_goes_upstream_byte_for_byte(tapped: tuple[Tap, str]) -> None:
    tap, url = tapped
    raw = (
        b'{"model": "smollm2-135m", "stream": true, "temperature": 0, "max_tokens": 8,  '
        b'"messages": [{"role": "user", "content": "Hi"}]}'
    )
    with httpx.stream(
        "POST",
        url + "/v1/chat/completions",
        content=raw,
        headers={"authorization": "Bearer k", "content-type": "application/json"},
        timeout=60,
    ) as resp:
        text = "".join(resp.iter_text())
    assert resp.status_code == 200 and text.rstrip().endswith("data: [DONE]")
    sent = _last(tap, "/v1/chat/completions")
    # Nothing to change (the alias is the route's id): the client's bytes, its odd spacing included, with
    # only `stream_options.include_usage` spliced in so the call is counted (SPEC §14).
    assert sent.raw.endswith(raw[1:]) and sent.raw != raw
    assert sent.body == {**json.loads(raw), "stream_options": {"include_usage": True}}


@pytest.mark.parametrize(
    "dialects,client,upstream_path",
    [
        (["openai"], "anthropic", "/v1/chat/completions"),
        (["openai"], "responses", "/v1/chat/completions"),
        (["anthropic"], "openai", "/v1/messages"),
    ],
    ids=["messages-client-on-chat", "responses-client-on-chat", "chat-client-on-messages"],
)
def test_translated_where_the_pool_forces_it(
    llama: LlamaServer, tmp_path: Path, dialects: list[str], client: str, upstream_path: str
) -> None:
    """A route limited to one dialect: the other clients reach llama translated, with llama's text."""
    text, usage = direct_chat(llama, PROMPT, 16)
    with Tap(llama.url) as tap:
        cfg = gateway_config(llama.provider(base_url=tap.url, models=[ALIAS], dialects=dialects))
        with serve_process(cfg, tmp_path) as gw:
            if client == "anthropic":
                m = anth(gw.url).messages.create(
                    model=ALIAS,
                    max_tokens=16,
                    messages=[{"role": "user", "content": PROMPT}],
                    extra_body=GREEDY,
                )
                got, out = m.content[0].text, m.usage.output_tokens  # type: ignore[union-attr]
                tokens_in = m.usage.input_tokens + (m.usage.cache_read_input_tokens or 0)
            elif client == "responses":
                r = oai(gw.url).responses.create(
                    model=ALIAS, max_output_tokens=16, input=PROMPT, extra_body=GREEDY
                )
                assert r.usage is not None
                got, out, tokens_in = r.output_text, r.usage.output_tokens, r.usage.input_tokens
            else:
                c = oai(gw.url).chat.completions.create(**chat_body(PROMPT, 16))
                assert c.usage is not None
                got, out = c.choices[0].message.content or "", c.usage.completion_tokens
                tokens_in = c.usage.prompt_tokens
        sent = [s for s in tap.sent if s.path.startswith("/v1/")][-1]
        assert sent.path == upstream_path
    if upstream_path == "/v1/messages":
        # The translation, sent straight to llama's Messages endpoint: the same text and usage (its input
        # split into prompt-cache reads and the rest, summed as modelpool's `prompt_tokens` is).
        text = (direct := llama.post(upstream_path, sent.body).json())["content"][0]["text"]
        usage = {
            "in": direct["usage"]["input_tokens"] + (direct["usage"].get("cache_read_input_tokens") or 0),
            "out": direct["usage"]["output_tokens"],
        }
    # The direct call's text and tokens (on llama's chat template for a translation onto its Chat endpoint).
    assert (got, tokens_in, out) == (text, usage["in"], usage["out"])
