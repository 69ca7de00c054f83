"""Native first (SPEC §1.6): a call in a dialect the route speaks goes upstream as it was sent and comes
back as it came; a walk that changes relay mid-call still gives the client one coherent stream."""

from __future__ import annotations

import anthropic
import httpx
import orjson
import pytest

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.protocols.sse import SSEParser
from modelpool.sim import (
    Fault,
    FleetSpec,
    FleetThread,
    SimModel,
    SimProvider,
    expected_reasoning,
    expected_text,
)

FAST = {"ttft": 0.005, "tps": 5000.0}
MODEL = "m1"


def spec() -> FleetSpec:
    model = SimModel(MODEL, output_tokens=5, reasoning_tokens=3)
    return FleetSpec(
        [
            SimProvider("an", kind="anthropic", models=[model], **FAST),
            SimProvider("an2", kind="anthropic", models=[model], **FAST),
            SimProvider("oa", models=[model], **FAST),
        ]
    )


@pytest.fixture(scope="module")
def ft() -> FleetThread:
    with FleetThread(spec()) as fleet:
        yield fleet


@pytest.fixture(autouse=True)
def _clean(ft: FleetThread) -> None:
    ft.reset_calls()
    for pid in ("an", "an2", "oa"):
        ft.set_faults(pid, [])


def config(ft: FleetThread, order: list[str], **pool: object) -> dict:
    cfg = ft.to_config(state={"backend": "memory"}, server={"admin_token": ADMIN_TOKEN})
    cfg["providers"] = [p for p in cfg["providers"] if p["id"] in order]
    cfg["pool"] = {"strategy": "priority", "provider_order": order, "retry_backoff": "1ms", "sticky": False}
    cfg["pool"].update(pool)
    return cfg


CLAUDE_CODE_HEADERS = {
    "anthropic-version": "2023-06-01",
    "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27",
    "x-api-key": "client-key-never-forwarded",
}
BODY = {
    "model": MODEL,
    "max_tokens": 256,
    "top_k": 5,
    "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]},
    "system": [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
    "messages": [{"role": "user", "content": "hi"}],
    "some_future_field": {"kept": True},
}


def events_of(raw: bytes) -> list[tuple[str | None, dict]]:
    return [(ev.event, orjson.loads(ev.data)) for ev in SSEParser().feed(raw)]


@pytest.mark.parametrize("stream", [False, True], ids=["once", "stream"])
def test_anthropic_call_on_an_anthropic_route_goes_upstream_as_sent(ft: FleetThread, stream: bool) -> None:
    with GatewayServer(config(ft, ["an"])) as gw:
        resp = httpx.post(
            gw.url + "/v1/messages", json={**BODY, "stream": stream}, headers=CLAUDE_CODE_HEADERS, timeout=30
        )
        assert resp.status_code == 200, resp.text
    call = ft.calls("an")[-1]
    assert call.body == {**BODY, "stream": stream}  # unknown fields, top_k, context_management: all there
    assert call.headers["anthropic-beta"] == CLAUDE_CODE_HEADERS["anthropic-beta"]
    assert call.headers["anthropic-version"] == "2023-06-01"
    assert "client-key-never-forwarded" not in str(call.headers)


def test_anthropic_stream_reaches_the_client_as_the_upstream_sent_it(ft: FleetThread) -> None:
    body = {**BODY, "stream": True}
    direct = httpx.post(
        ft.root_url("an") + "/v1/messages", json=body, headers=CLAUDE_CODE_HEADERS, timeout=30
    )
    with GatewayServer(config(ft, ["an"])) as gw:
        relayed = httpx.post(gw.url + "/v1/messages", json=body, headers=CLAUDE_CODE_HEADERS, timeout=30)
    mine, theirs = events_of(relayed.content), events_of(direct.content)
    assert [e for e, _ in mine] == [e for e, _ in theirs]
    for (event, got), (_, want) in zip(mine, theirs, strict=True):
        if event == "message_delta":
            assert got.pop("modelpool")["route"] == "an/m1"
        if event == "message_start":
            got["message"].pop("id"), want["message"].pop("id")
        assert got == want


def test_a_request_error_from_a_native_route_reaches_the_client_unchanged(ft: FleetThread) -> None:
    ft.set_faults("an", [Fault("status", status=400, message="messages.0: thinking block without signature")])
    direct = httpx.post(
        ft.root_url("an") + "/v1/messages", json=BODY, headers=CLAUDE_CODE_HEADERS, timeout=30
    )
    ft.set_faults("an", [Fault("status", status=400, message="messages.0: thinking block without signature")])
    with GatewayServer(config(ft, ["an"])) as gw:
        resp = httpx.post(gw.url + "/v1/messages", json=BODY, headers=CLAUDE_CODE_HEADERS, timeout=30)
    assert resp.status_code == 400
    assert resp.content == direct.content


def test_failover_from_a_native_anthropic_route_to_a_translated_chat_route_mid_reasoning(
    ft: FleetThread,
) -> None:
    """Reasoning streamed natively from `an`, then `an` fails before any text; `oa` (chat only) answers
    through the translator: one Messages stream the SDK parses, block indices going on."""
    ft.set_faults("an", [Fault("error_event", status=529)])
    with GatewayServer(config(ft, ["an", "oa"], retries_per_route=0)) as gw:
        client = anthropic.Anthropic(base_url=gw.url, api_key="x", max_retries=0)
        with client.messages.stream(
            model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            text = "".join(stream.text_stream)
            final = stream.get_final_message()
        raw = httpx.post(
            gw.url + "/v1/messages",
            json={
                "model": MODEL,
                "max_tokens": 64,
                "stream": True,
                "messages": [{"role": "user", "content": "hi"}],
            },
            timeout=30,
        ).content
    assert text == expected_text("oa", MODEL, 5)
    thinking = [b.thinking for b in final.content if b.type == "thinking"]
    assert "".join(thinking) == expected_reasoning("an", MODEL, 3) + expected_reasoning("oa", MODEL, 3)
    assert [c.path.rsplit("/", 1)[-1] for c in ft.calls("an")][:1] == ["messages"]
    assert ft.calls("oa")[0].path.endswith("/chat/completions")
    # on the wire: one message_start, block indices 0, 1, 2 … each started once and stopped once
    events = events_of(raw)
    assert [e for e, _ in events].count("message_start") == 1
    starts = [o["index"] for e, o in events if e == "content_block_start"]
    stops = [o["index"] for e, o in events if e == "content_block_stop"]
    assert starts == list(range(len(starts))) and sorted(stops) == starts


def test_failover_between_two_native_anthropic_routes_continues_the_indices(ft: FleetThread) -> None:
    ft.set_faults("an", [Fault("error_event", status=529)])
    with GatewayServer(config(ft, ["an", "an2"], retries_per_route=0)) as gw:
        raw = httpx.post(
            gw.url + "/v1/messages",
            json={
                "model": MODEL,
                "max_tokens": 64,
                "stream": True,
                "messages": [{"role": "user", "content": "hi"}],
            },
            timeout=30,
        ).content
        client = anthropic.Anthropic(base_url=gw.url, api_key="x", max_retries=0)
        ft.set_faults("an", [Fault("error_event", status=529)])
        with client.messages.stream(
            model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            text = "".join(stream.text_stream)
    assert text == expected_text("an2", MODEL, 5)
    events = events_of(raw)
    assert [e for e, _ in events].count("message_start") == 1
    starts = [o["index"] for e, o in events if e == "content_block_start"]
    assert starts == list(range(len(starts))) and len(starts) >= 3
    final = [o for e, o in events if e == "message_delta"][-1]
    assert final["modelpool"]["route"] == "an2/m1" and final["modelpool"]["switched_from"] == "an/m1"


def test_count_tokens_is_the_anthropic_routes_own_count(ft: FleetThread) -> None:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "x" * 400}]}
    with GatewayServer(config(ft, ["oa", "an"])) as gw:
        resp = httpx.post(gw.url + "/v1/messages/count_tokens", json=body, headers=CLAUDE_CODE_HEADERS)
        assert resp.status_code == 200
        assert resp.headers["x-modelpool-route"] == "an/m1"
    assert ft.calls("an")[-1].headers["anthropic-beta"] == CLAUDE_CODE_HEADERS["anthropic-beta"]
    assert "count_tokens" in ft.calls("an")[-1].path
    direct = httpx.post(ft.root_url("an") + "/v1/messages/count_tokens", json=body)
    assert resp.content == direct.content


def test_count_tokens_is_an_estimate_where_no_route_speaks_messages(ft: FleetThread) -> None:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "x" * 400}]}
    with GatewayServer(config(ft, ["oa"])) as gw:
        resp = httpx.post(gw.url + "/v1/messages/count_tokens", json=body)
    assert resp.status_code == 200 and resp.headers["x-modelpool-estimate"] == "true"
    assert resp.json()["input_tokens"] >= 100
    assert not [c for c in ft.calls("oa") if "count_tokens" in c.path]


# ---- Responses --------------------------------------------------------------------------------------


def responses_spec() -> FleetSpec:
    model = SimModel(MODEL, output_tokens=5, reasoning_tokens=3)
    return FleetSpec(
        [
            SimProvider("ra", dialects=("openai", "responses"), models=[model], **FAST),
            SimProvider("rb", dialects=("openai", "responses"), models=[model], **FAST),
            SimProvider("ch", models=[model], **FAST),
        ]
    )


@pytest.fixture(scope="module")
def rft() -> FleetThread:
    with FleetThread(responses_spec()) as fleet:
        yield fleet


@pytest.fixture
def rclean(rft: FleetThread) -> FleetThread:
    rft.reset_calls()
    for pid in ("ra", "rb", "ch"):
        rft.set_faults(pid, [])
    return rft


CODEX_BODY = {
    "model": MODEL,
    "instructions": "You are Codex.",
    "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
    "tools": [
        {"type": "custom", "name": "apply_patch", "description": "edit files", "format": {"type": "text"}},
        {"type": "local_shell"},
        {"type": "web_search"},
    ],
    "include": ["reasoning.encrypted_content"],
    "store": False,
    "prompt_cache_key": "session-1",
    "text": {"verbosity": "low"},
    "reasoning": {"summary": "auto"},
    "parallel_tool_calls": False,
}


@pytest.mark.parametrize("stream", [False, True], ids=["once", "stream"])
def test_responses_call_on_a_responses_route_goes_upstream_as_sent(rclean: FleetThread, stream: bool) -> None:
    with GatewayServer(config(rclean, ["ra"])) as gw:
        resp = httpx.post(
            gw.url + "/v1/responses",
            json={**CODEX_BODY, "stream": stream},
            headers={"openai-beta": "responses=experimental", "authorization": "Bearer client-key"},
            timeout=30,
        )
        assert resp.status_code == 200, resp.text
    call = rclean.calls("ra")[-1]
    assert call.path.endswith("/responses")
    assert call.body == {**CODEX_BODY, "stream": stream}  # custom, local_shell, web_search tools all there
    assert call.headers["openai-beta"] == "responses=experimental"
    assert "client-key" not in str(call.headers)


def test_responses_stream_reaches_the_client_as_the_upstream_sent_it(rclean: FleetThread) -> None:
    body = {**CODEX_BODY, "stream": True}
    direct = httpx.post(rclean.base_url("ra") + "/responses", json=body, timeout=30)
    with GatewayServer(config(rclean, ["ra"])) as gw:
        relayed = httpx.post(gw.url + "/v1/responses", json=body, timeout=30)
    mine, theirs = events_of(relayed.content), events_of(direct.content)
    assert [e for e, _ in mine] == [e for e, _ in theirs]
    for (event, got), (_, want) in zip(mine, theirs, strict=True):
        if event == "response.completed":
            assert got["response"].pop("modelpool")["route"] == "ra/m1"
        assert strip_ids(got) == strip_ids(want)


GENERATED = ("id", "item_id", "call_id", "created_at", "created")


def strip_ids(value: object) -> object:
    """The event without its generated ids (each upstream response draws new ones)."""
    if isinstance(value, dict):
        return {
            k: strip_ids(v)
            for k, v in value.items()
            if k not in ("id", "item_id", "call_id", "created_at", "created")
        }
    if isinstance(value, list):
        return [strip_ids(v) for v in value]
    return value


def test_the_openai_sdk_parses_a_native_responses_stream(rclean: FleetThread) -> None:
    import openai

    with GatewayServer(config(rclean, ["ra"])) as gw:
        client = openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0)
        with client.responses.stream(model=MODEL, input="hi") as stream:
            final = stream.get_final_response()
    assert final.output_text == expected_text("ra", MODEL, 5)


def test_previous_response_id_goes_to_the_route_that_stored_it(rclean: FleetThread) -> None:
    import openai

    with GatewayServer(config(rclean, ["ra", "rb"], strategy="round-robin")) as gw:
        client = openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0)
        first = client.responses.create(model=MODEL, input="hi")
        producer = "ra" if rclean.calls("ra") else "rb"
        for _ in range(3):  # round-robin would move on; the stored response pins the follow-ups
            follow = client.responses.create(model=MODEL, input="more", previous_response_id=first.id)
            assert follow.output_text
        assert [c.body.get("previous_response_id") for c in rclean.calls(producer)[1:]] == [first.id] * 3
        other = {"ra": "rb", "rb": "ra"}[producer]
        assert not [c for c in rclean.calls(other) if c.body.get("previous_response_id")]
        with pytest.raises(openai.BadRequestError) as err:
            client.responses.create(model=MODEL, input="more", previous_response_id="resp_never_seen")
        assert "previous_response_id" in str(err.value)


def test_responses_failover_mid_reasoning_from_native_to_translated_is_one_stream(
    rclean: FleetThread,
) -> None:
    import openai

    rclean.set_faults("ra", [Fault("error_event", status=529)])
    with GatewayServer(config(rclean, ["ra", "ch"], retries_per_route=0)) as gw:
        client = openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0)
        body = {"model": MODEL, "input": "hi", "reasoning": {"effort": "high", "summary": "auto"}}
        with client.responses.stream(**body) as stream:
            final = stream.get_final_response()
    rclean.set_faults("ra", [Fault("error_event", status=529)])
    with GatewayServer(config(rclean, ["ra", "ch"], retries_per_route=0)) as gw:  # ra rests in the first one
        raw = httpx.post(gw.url + "/v1/responses", json={**body, "stream": True}, timeout=30).content
    assert final.output_text == expected_text("ch", MODEL, 5)
    assert rclean.calls("ch")[0].path.endswith("/chat/completions")
    assert rclean.calls("ra")[0].path.endswith("/responses")
    events = events_of(raw)
    kinds = [e for e, _ in events]
    assert kinds.count("response.created") == 1 and kinds[-1] == "response.completed"
    seqs = [o["sequence_number"] for _, o in events]
    assert seqs == list(range(len(seqs)))
    added = [o["output_index"] for e, o in events if e == "response.output_item.added"]
    assert added == list(range(len(added)))
    reasoning = "".join(o["delta"] for e, o in events if e.startswith("response.reasoning") and "delta" in o)
    assert reasoning.startswith(expected_reasoning("ra", MODEL, 3))  # ra's native reasoning came first
    assert reasoning.endswith(expected_reasoning("ch", MODEL, 3))  # then ch's, translated
    created_id = next(o["response"]["id"] for e, o in events if e == "response.created")
    assert events[-1][1]["response"]["id"] == created_id


def test_an_openai_client_on_a_mixed_pool_is_byte_faithful_on_its_openai_attempts(ft: FleetThread) -> None:
    """The pool holds an Anthropic route too: the OpenAI client's attempt on it is translated (and fails
    here), the attempt on the OpenAI route is native — its chunks reach the client as the route sent them."""
    ft.set_faults("an", [Fault("quota", times=1)])
    body = {"model": MODEL, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    direct = httpx.post(ft.base_url("oa") + "/chat/completions", json=body, timeout=30)
    with GatewayServer(config(ft, ["an", "oa"])) as gw:
        relayed = httpx.post(gw.url + "/v1/chat/completions", json=body, timeout=30)
    assert relayed.headers["x-modelpool-route"] == "oa/m1"
    assert ft.calls("an")[-1].path.endswith("/messages") and ft.calls("oa")[-1].path.endswith(
        "/chat/completions"
    )
    mine = [ev.data for ev in SSEParser().feed(relayed.content)]
    theirs = [ev.data for ev in SSEParser().feed(direct.content)]
    assert len(mine) == len(theirs) and mine[-1] == theirs[-1] == b"[DONE]"
    final = orjson.loads(mine[-2])
    assert final.pop("modelpool")["switched_from"] == "an/m1"
    assert strip_ids(final) == strip_ids(orjson.loads(theirs[-2]))
    for got, want in zip(mine[:-2], theirs[:-2], strict=True):  # every other chunk: the route's own bytes
        assert strip_ids(orjson.loads(got)) == strip_ids(orjson.loads(want))
        assert len(got) == len(want)


def test_a_native_attempt_that_changes_nothing_sends_the_clients_bytes(ft: FleetThread) -> None:
    """The route's model id is the one the client named, no effort tier to rewrite, no order to inject:
    the upstream gets the request body byte for byte (spacing, key order, escapes), not a re-encoding. A
    route with another model id gets the re-encoded body with its own id."""
    raw = (
        b'{ "messages" : [ {"role":"user", "content":"caf\\u00e9 \\ud83d\\ude00"} ],\n'
        b'  "stream": false, "max_tokens": 64, "model": "m1", "zz_unknown": {"b": 1, "a": 2} }'
    )
    with GatewayServer(config(ft, ["oa"])) as gw:
        resp = httpx.post(
            gw.url + "/v1/chat/completions",
            content=raw,
            headers={"content-type": "application/json"},
            timeout=10,
        )
        assert resp.status_code == 200, resp.text
    assert ft.calls("oa")[-1].raw_body == raw

    cfg = config(ft, ["oa"])
    cfg["aliases"] = {"alias": "m1"}
    with GatewayServer(cfg) as gw:
        resp = httpx.post(
            gw.url + "/v1/chat/completions",
            content=raw.replace(b'"model": "m1"', b'"model": "alias"'),
            headers={"content-type": "application/json"},
            timeout=10,
        )
        assert resp.status_code == 200, resp.text
    sent = ft.calls("oa")[-1].raw_body
    assert orjson.loads(sent)["model"] == "m1" and orjson.loads(sent)["zz_unknown"] == {"b": 1, "a": 2}
