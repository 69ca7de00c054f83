"""`protocols/loss.py` and the demotion it drives (SPEC §1.6, §3.1 step 3): which dialect a route is spoken
to, what each translation drops and whether that changes the answer, the texts the relay sends (400 message,
`x-modelpool-dropped`), what a reply carries that the client cannot see, modelpool's own encrypted reasoning
carried while another provider's is reported, and the planner moving a lossy translating route to the back.

In-process: the planner and the translators are pure. The property test next door checks that these lists
are complete; here each decision is pinned on a named case.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from proto_helpers import translate

from modelpool.gateway import Gateway
from modelpool.protocols.loss import (
    Loss,
    blocking,
    demotion_reason,
    dropped_header,
    dropped_names,
    refusal_message,
    reply_drops,
    translation_losses,
    translation_target,
)
from modelpool.protocols.translate_any import translate_request_for
from modelpool.protocols.translate_reasoning import drop_sealed_reasoning
from modelpool.routing.lossy import call_losses, translation_check

REQUESTS = Path(__file__).parent / "corpus" / "requests"


class Speaks:
    def __init__(self, *dialects: str) -> None:
        self.dialects = dialects

    def speaks(self, dialect: str) -> bool:
        return dialect in self.dialects


def corpus(name: str) -> dict[str, Any]:
    return orjson.loads((REQUESTS / name).read_bytes())  # type: ignore[no-any-return]


def fields(losses: list[Loss], changes: bool | None = None) -> list[str]:
    return [x.field for x in losses if changes is None or x.changes_answer is changes]


@pytest.mark.parametrize(
    ("ingress", "dialects", "target"),
    [
        ("responses", ("openai", "anthropic", "responses"), "responses"),
        ("responses", ("openai", "anthropic"), "openai"),
        ("responses", ("anthropic",), "anthropic"),
        ("anthropic", ("openai", "anthropic"), "anthropic"),
        ("anthropic", ("openai",), "openai"),
        ("anthropic", ("responses",), None),
        ("openai", ("anthropic",), "anthropic"),
        ("openai", ("responses",), None),
    ],
)
def test_translation_target(ingress: str, dialects: tuple[str, ...], target: str | None) -> None:
    assert translation_target(ingress, Speaks(*dialects)) == target


def test_native_attempts_lose_nothing() -> None:
    body = corpus("anthropic_claude_code_web_search.json")
    assert translation_losses("anthropic", body, "anthropic") == []
    assert translate_request_for("anthropic", body, "anthropic") == body


def test_claude_code_main_loop_on_a_chat_route_loses_only_harmless_fields() -> None:
    losses = translation_losses("anthropic", corpus("anthropic_claude_code_main_loop.json"), "openai")
    assert blocking(losses) == []  # Claude Code may work on a chat-only route
    assert dropped_names(losses) == ["context_management", "cache_control", "signature"]


def test_claude_code_web_search_needs_an_anthropic_route() -> None:
    losses = translation_losses("anthropic", corpus("anthropic_claude_code_web_search.json"), "openai")
    assert fields(losses, True) == ["tools[web_search]", "server_tool_use", "web_search_tool_result"]
    assert {"top_k", "messages[1].content[2].citations"} <= set(fields(losses, False))
    assert demotion_reason(losses, "openai") == (
        "demoted: would drop tools[web_search], server_tool_use, web_search_tool_result"
        " when translating to chat"
    )
    message = refusal_message(losses, "openai")
    assert message is not None and "tools[web_search]" in message and "lossy_translation: allow" in message


def test_codex_with_openai_reasoning_and_web_search() -> None:
    body = corpus("responses_codex_openai_reasoning.json")
    for target in ("openai", "anthropic"):
        losses = translation_losses("responses", body, target)
        assert fields(losses, True) == ["tools[web_search]", "input[3].encrypted_content"]
        assert {"text.verbosity", "reasoning.summary"} <= set(fields(losses, False))
    # custom / local_shell tools and their history are carried, not reported
    assert not any("apply_patch" in f or "local_shell" in f for f in fields(losses))


def test_codex_with_modelpools_own_reasoning_is_carried_to_anthropic() -> None:
    body = corpus("responses_codex_own_reasoning.json")
    losses = translation_losses("responses", body, "anthropic")
    assert blocking(losses) == []
    out = translate_request_for("responses", body, "anthropic")
    thinking = [
        b for t in out["messages"] for b in t["content"] if isinstance(b, dict) and b["type"] == "thinking"
    ]
    assert thinking[0]["signature"] == body["input"][3]["encrypted_content"].removeprefix("mp1.sig.")


def test_own_redacted_reasoning_goes_back_as_redacted_thinking() -> None:
    item = {"type": "reasoning", "summary": [], "encrypted_content": "mp1.red.OPAQUE"}
    body = {"model": "m", "input": ["hi", item, {"role": "assistant", "content": "ok"}]}
    body["input"][0] = {"role": "user", "content": "hi"}
    assert translation_losses("responses", body, "anthropic") == []
    out = translate_request_for("responses", body, "anthropic")
    assert out["messages"][1]["content"][0] == {"type": "redacted_thinking", "data": "OPAQUE"}


def test_chat_client_on_an_anthropic_route() -> None:
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "n": 2,
        "seed": 3,
        "logprobs": True,
        "web_search_options": {},
        "response_format": {"type": "json_object"},
    }
    losses = translation_losses("openai", body, "anthropic")
    assert fields(losses, True) == ["n"]  # an empty web_search_options asks for nothing
    assert fields(losses, False) == ["seed", "logprobs", "response_format"]
    body["web_search_options"] = {"search_context_size": "low"}
    assert fields(translation_losses("openai", body, "anthropic"), True) == ["web_search_options", "n"]


def test_a_body_the_translator_refuses_is_a_loss_that_changes_the_answer() -> None:
    body = {
        "model": "m",
        "max_tokens": 10,
        "messages": [
            {"role": "user", "content": [{"type": "document", "source": {"type": "file", "file_id": "f"}}]}
        ],
    }
    losses = translation_losses("anthropic", body, "openai")
    assert fields(losses, True) == ["messages[0].content[0]"]


def test_dropped_header_lists_request_then_reply_drops() -> None:
    losses = [Loss("top_k", False, "top_k"), Loss("tools[web_search]", True, "tools[1]")]
    assert dropped_header(losses, ["citations", "top_k"]) == "top_k, tools[web_search], citations"
    assert refusal_message([Loss("top_k", False, "top_k")], "openai") is None


# ---------------------------------------------------------------- replies


def test_reply_drops_of_a_body() -> None:
    anthropic_reply = {
        "content": [
            {"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}},
            {"type": "web_search_tool_result", "tool_use_id": "s", "content": []},
            {"type": "text", "text": "x", "citations": [{"type": "web_search_result_location", "url": "u"}]},
        ]
    }
    assert reply_drops(anthropic_reply, "anthropic", "openai") == [
        "server_tool_use",
        "web_search_tool_result",
        "citations",
    ]
    assert reply_drops(anthropic_reply, "anthropic", "anthropic") == []
    chat_reply = {"choices": [{"message": {"content": "x", "annotations": [{"type": "url_citation"}]}}]}
    assert reply_drops(chat_reply, "openai", "responses") == ["annotations"]


def _anthropic_sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(b"event: " + e["type"].encode() + b"\ndata: " + orjson.dumps(e) + b"\n\n" for e in events)


def test_a_stream_records_what_the_client_cannot_see() -> None:
    start = {"id": "m", "type": "message", "role": "assistant", "model": "m", "content": [], "usage": {}}
    data = _anthropic_sse(
        [
            {"type": "message_start", "message": start},
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}},
            },
            {"type": "content_block_stop", "index": 0},
            {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "text_delta", "text": "Python 3.14"},
            },
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "citations_delta", "citation": {"url": "u"}},
            },
            {"type": "content_block_stop", "index": 1},
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}},
            {"type": "message_stop"},
        ]
    )
    for client in ("openai", "responses"):
        _, t = translate(data, "anthropic", client)
        assert t.dropped == ["server_tool_use", "citations"]


# ---------------------------------------------------------------- planner demotion


def gateway(lossy: str = "refuse") -> Gateway:
    providers = [
        {"id": "chat", "kind": "openai", "base_url": "http://127.0.0.1:9/chat/v1", "models": ["m1"]},
        {
            "id": "anth",
            "kind": "anthropic",
            "base_url": "http://127.0.0.1:9/anth",
            "models": ["m1"],
            "api_key": "k",
        },
        {
            "id": "agg",
            "kind": "openai",
            "dialects": ["openai", "responses"],
            "base_url": "http://127.0.0.1:9/agg/v1",
            "models": ["m1"],
        },
    ]
    return Gateway.from_config(
        {
            "providers": providers,
            "pool": {"strategy": "priority", "sticky": False, "lossy_translation": lossy, "max_attempts": 3},
            "state": {"backend": "memory"},
            "holidays": {"sync": False},
        }
    )


def plan(gw: Gateway, ingress: str, body: dict[str, Any]) -> list[tuple[str, list[str]]]:
    call = gw.prepare(ingress, body, {})
    made = gw.planner.plan(gw.runtime, call)
    return [(c.key, made.reasons(c)) for c in made.candidates]


def test_a_route_that_would_drop_web_search_goes_to_the_back() -> None:
    gw = gateway()
    body = {**corpus("responses_codex_openai_reasoning.json"), "model": "m1"}
    order = plan(gw, "responses", body)
    assert [k for k, _ in order] == ["agg/m1", "chat/m1", "anth/m1"]
    chat_why = order[1][1]
    assert (
        "demoted: would drop tools[web_search], input[3].encrypted_content when translating to chat"
        in chat_why
    )
    assert any("when translating to anthropic" in why for why in order[2][1])


def test_harmless_losses_do_not_demote_and_speaking_routes_are_never_asked() -> None:
    gw = gateway()
    body = {**corpus("anthropic_claude_code_main_loop.json"), "model": "m1"}
    order = plan(gw, "anthropic", body)
    assert [k for k, _ in order] == ["chat/m1", "anth/m1", "agg/m1"]  # base order: nothing demoted
    assert not any("demoted" in why for _, whys in order for why in whys)
    search = {**corpus("anthropic_claude_code_web_search.json"), "model": "m1"}
    assert [k for k, _ in plan(gw, "anthropic", search)] == ["anth/m1", "chat/m1", "agg/m1"]


def test_losses_are_computed_once_per_call_and_target() -> None:
    gw = gateway()
    body = {**corpus("responses_codex_openai_reasoning.json"), "model": "m1"}
    call = gw.prepare("responses", body, {})
    gw.planner.plan(gw.runtime, call)
    assert call._losses is not None and set(call._losses) == {"openai", "anthropic"}
    memo = call._losses["openai"]
    assert call_losses(call, "openai") is memo  # the relay reads the planner's list


def test_a_call_whose_routes_all_speak_its_dialect_is_never_walked() -> None:
    gw = gateway()
    call = gw.prepare(
        "openai", {"model": "m1", "messages": [{"role": "user", "content": "hi"}], "top_k": 3}, {}
    )
    # chat and agg speak openai, anth does not: translating → asked; an Anthropic-only pool is the reverse
    gw.planner.plan(gw.runtime, call)
    assert call._losses is not None and set(call._losses) == {"anthropic"}
    only_chat = Gateway.from_config(
        {
            "providers": [
                {"id": "chat", "kind": "openai", "base_url": "http://127.0.0.1:9/v1", "models": ["m1"]}
            ],
            "pool": {"strategy": "priority", "sticky": False},
            "state": {"backend": "memory"},
            "holidays": {"sync": False},
        }
    )
    call = only_chat.prepare("openai", {"model": "m1", "messages": [{"role": "user", "content": "hi"}]}, {})
    only_chat.planner.plan(only_chat.runtime, call)
    assert call._losses is None


def test_translation_check_refuses_or_reports() -> None:
    gw = gateway()
    body = {**corpus("anthropic_claude_code_web_search.json"), "model": "m1"}
    call = gw.prepare("anthropic", body, {})
    message, dropped = translation_check(call, "openai", "refuse")
    assert message is not None and message.startswith("this route must translate the request to chat")
    assert "tools[web_search], server_tool_use, web_search_tool_result" in message and dropped == []
    message, dropped = translation_check(call, "openai", "allow")
    assert message is None
    assert dropped == ["top_k", "tools[web_search]", "server_tool_use", "web_search_tool_result", "citations"]
    assert translation_check(call, "anthropic", "refuse") == (None, [])  # native
    main = gw.prepare("anthropic", {**corpus("anthropic_claude_code_main_loop.json"), "model": "m1"}, {})
    assert translation_check(main, "openai", "refuse") == (
        None,
        ["context_management", "cache_control", "signature"],
    )


def test_offered_hosted_tools_are_left_out_by_default_history_is_not() -> None:
    """SPEC §1.6: under the default (`tools`) a hosted tool the client only offers is left out and named;
    its results already in the history (server_tool_use, web_search_tool_result) still refuse the call."""
    gw = gateway()
    offered_only = {**corpus("anthropic_claude_code_main_loop.json"), "model": "m1"}
    offered_only["tools"] = [
        *offered_only.get("tools", []),
        {"type": "web_search_20250305", "name": "web_search"},
    ]
    call = gw.prepare("anthropic", offered_only, {})
    message, dropped = translation_check(call, "openai", "tools")
    assert message is None and "tools[web_search]" in dropped
    message, _ = translation_check(call, "openai", "refuse")
    assert message is not None and "tools[web_search]" in message
    with_history = gw.prepare(
        "anthropic", {**corpus("anthropic_claude_code_web_search.json"), "model": "m1"}, {}
    )
    message, _ = translation_check(with_history, "openai", "tools")
    assert message is not None and "server_tool_use" in message and "tools[web_search]" not in message


def test_codex_tool_search_is_carried_and_web_search_offered() -> None:
    recorded = orjson.loads((REQUESTS.parent / "clients" / "codex_turn1.json").read_bytes())
    body = {**recorded["body"], "model": "m1"}
    for target in ("openai", "anthropic"):
        losses = translation_losses("responses", body, target)
        assert not any("tool_search" in loss.field for loss in losses), losses
        hosted = [loss for loss in losses if loss.changes_answer]
        assert [(loss.field, loss.offered) for loss in hosted] == [("tools[web_search]", True)]


def test_a_native_responses_attempt_leaves_out_modelpools_own_reasoning() -> None:
    own = corpus("responses_codex_own_reasoning.json")
    out = drop_sealed_reasoning(own)
    assert [i.get("type") for i in out["input"]] == [
        i.get("type") for i in own["input"] if i.get("type") != "reasoning"
    ]
    theirs = corpus("responses_codex_openai_reasoning.json")
    assert drop_sealed_reasoning(theirs) is theirs  # OpenAI's own blob goes back to OpenAI untouched
