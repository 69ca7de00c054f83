"""Routing records from every place the gateway puts them; served-by memory; affinity explanations."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from agg_fixtures import FakeClock, sse_data

from modelpool.aggregators import (
    ProviderAttempt,
    RoutingRecord,
    ServedBy,
    find_routing,
    routing_from_sse_data,
)


def fixture_c() -> dict[str, Any]:
    return orjson.loads(sse_data("routing_fixture_c.sse")[0])


def test_fixture_c_openai_final_chunk() -> None:
    rec = routing_from_sse_data(sse_data("routing_fixture_c.sse")[0])
    assert rec == RoutingRecord(
        final_provider="deepseek",
        resolved_provider="deepseek",
        affinity_outcome="confirmed",
        attempts=(ProviderAttempt("deepseek", 200, True),),
        fallbacks_available=(),
        pinned_provider="deepseek",
        session_id="sess-fixture-1",
        model="deepseek/deepseek-v4.1-flash",
        generation_id=None,
    )
    assert not rec.fell_back
    assert routing_from_sse_data(b"[DONE]") is None


def test_fixture_c_fallback_variant() -> None:
    rec = routing_from_sse_data(sse_data("routing_fixture_c_fallback.sse")[0])
    assert rec is not None
    assert (rec.final_provider, rec.resolved_provider, rec.affinity_outcome) == (
        "alibaba",
        "deepseek",
        "fallback",
    )
    assert [(a.provider, a.status) for a in rec.attempts] == [
        ("deepseek", 429),
        ("deepseek", 503),
        ("alibaba", 200),
    ]
    assert rec.fallbacks_available == ("particle",)
    assert rec.fell_back
    assert [a.status for a in rec.failed_attempts] == [429, 503]


def test_anthropic_message_delta_real_capture() -> None:
    data = sse_data("anthropic_message_delta.sse")
    rec = routing_from_sse_data(data[0])
    assert rec is not None
    assert rec.final_provider == rec.resolved_provider == "anthropic"
    assert rec.fallbacks_available == ("bedrock", "vertexAnthropic")
    assert rec.attempts == (ProviderAttempt("anthropic", 200, True),)
    assert rec.generation_id == "gen_01KY071V9GQK1EBS343E5TY39W"
    assert rec.affinity_outcome is None  # not every gateway sends affinity
    assert routing_from_sse_data(data[1]) is None  # message_stop


def routing_of_c() -> dict[str, Any]:
    return fixture_c()["choices"][0]["delta"]["provider_metadata"]["gateway"]["routing"]


def gw() -> dict[str, Any]:
    return {"gateway": {"routing": routing_of_c(), "generationId": "gen-1"}}


@pytest.mark.parametrize(
    "body",
    [
        # OpenAI non-stream: choices[0].message.provider_metadata
        {"object": "chat.completion",
         "choices": [{"index": 0, "message": {"role": "assistant", "provider_metadata": gw()}}]},
        # Anthropic non-stream /v1/messages: top-level provider_metadata
        {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "hi"}],
         "provider_metadata": gw()},
        # Responses non-stream: top-level providerMetadata (camelCase)
        {"object": "response", "output": [], "providerMetadata": gw()},
        # Responses stream `response.completed` event
        {"type": "response.completed", "response": {"providerMetadata": gw()}},
        # an error body that still says where it went
        {"error": {"message": "rate limited", "providerMetadata": gw()}},
    ],
    ids=["openai", "anthropic", "responses", "responses-stream", "error"],
)  # fmt: skip
def test_non_stream_bodies(body: dict[str, Any]) -> None:
    rec = find_routing(body)
    assert rec is not None and rec.final_provider == "deepseek" and rec.generation_id == "gen-1"
    assert routing_from_sse_data(orjson.dumps(body)) == rec


def test_flat_attempts_and_missing_final_provider() -> None:
    routing = {
        "resolvedProvider": "anthropic",
        "attempts": [
            {"provider": "anthropic", "credentialType": "byok", "success": False, "error": "Unauthorized"},
            {"provider": "anthropic", "credentialType": "system", "success": True},
        ],
    }
    rec = find_routing({"provider_metadata": {"gateway": {"routing": routing}}})
    assert rec is not None
    assert rec.final_provider == "anthropic"  # derived from the last successful attempt
    assert rec.attempts == (
        ProviderAttempt("anthropic", None, False),
        ProviderAttempt("anthropic", None, True),
    )


@pytest.mark.parametrize(
    "obj",
    [
        {},
        {"choices": []},
        {"provider_metadata": {"gateway": {"generationId": "gen-only"}}},  # older captures: no routing
        {"provider_metadata": {"gateway": {"routing": {}}}},
        {"provider_metadata": {"gateway": {"routing": "x"}}},
        "not a dict",
    ],
)
def test_no_record(obj: Any) -> None:
    assert find_routing(obj) is None


def test_routing_bytes_without_the_word_are_not_parsed() -> None:
    assert routing_from_sse_data(b"not json at all") is None
    assert routing_from_sse_data(b'{"routing": broken') is None


# ---- ServedBy + explain_affinity ----------------------------------------------------------------------


def rec(final: str, *, outcome: str | None = None, attempts: list[tuple[str, int]] | None = None,
        resolved: str | None = None, pinned: str | None = None) -> RoutingRecord:  # fmt: skip
    tried = attempts or [(final, 200)]
    return RoutingRecord(
        final_provider=final,
        resolved_provider=resolved or tried[0][0],
        affinity_outcome=outcome,
        attempts=tuple(ProviderAttempt(p, s, s < 400) for p, s in tried),
        pinned_provider=pinned,
        model="deepseek/deepseek-v4.1-flash-1017",
    )


def test_first_message_is_a_new_pick(clock: FakeClock) -> None:
    served = ServedBy(clock=clock)
    served.observe("s1", rec("subconscious"))
    e = served.explain_affinity("s1")
    assert e is not None and e.outcome == "new pick" and e.provider == "subconscious"
    assert "first message" in e.sentence and "subconscious" in e.sentence
    assert served.explain_affinity("unknown") is None


def test_next_message_within_cache_lifetime_is_pinned(clock: FakeClock) -> None:
    served = ServedBy(clock=clock)
    served.observe("s1", rec("subconscious"))
    clock.advance(120)
    served.observe("s1", rec("subconscious"))
    e = served.explain_affinity("s1")
    assert e is not None and e.outcome == "pinned" and e.idle_s == 120
    assert e.sentence.startswith("Pinned: session affinity kept the session on subconscious")


def test_idle_longer_than_cache_lifetime_is_a_new_pick(clock: FakeClock) -> None:
    served = ServedBy(clock=clock)
    served.observe("s1", rec("baseten"))
    clock.advance(6 * 60)  # most providers: ~5 min
    served.observe("s1", rec("subconscious"))
    e = served.explain_affinity("s1")
    assert e is not None and e.outcome == "new pick" and e.previous_provider == "baseten"
    assert "idle 6 min, longer than baseten's ~5 min cache lifetime" in e.sentence


def test_deepseek_first_party_cache_lives_an_hour(clock: FakeClock) -> None:
    served = ServedBy(clock=clock)
    served.observe("s1", rec("deepseek"))
    clock.advance(30 * 60)
    served.observe("s1", rec("deepseek"))
    e = served.explain_affinity("s1")
    assert e is not None and e.outcome == "pinned"
    # A caller may supply its own lifetimes (e.g. from provider config).
    e2 = served.explain_affinity("s1", cache_lifetime=60)
    assert e2 is not None and e2.outcome == "new pick"
    e3 = served.explain_affinity("s1", cache_lifetime=lambda slug: 7200.0)
    assert e3 is not None and e3.outcome == "pinned"


def test_started_at_measures_idle_from_the_call_not_the_reply_end(clock: FakeClock) -> None:
    served = ServedBy(clock=clock)
    served.observe("s1", rec("baseten"), at=1000)
    served.observe("s1", rec("baseten"), started_at=1290, at=1400)  # a long reply ending after 5 min
    e = served.explain_affinity("s1")
    assert e is not None and e.outcome == "pinned" and e.idle_s == 290


def test_fallback(clock: FakeClock) -> None:
    served = ServedBy(clock=clock)
    served.observe("s1", rec("deepseek"))
    clock.advance(10)
    r = rec("alibaba", outcome="fallback", resolved="deepseek", pinned="deepseek",
            attempts=[("deepseek", 429), ("deepseek", 503), ("alibaba", 200)])  # fmt: skip
    served.observe("s1", r)
    e = served.explain_affinity("s1")
    assert e is not None and e.outcome == "fallback" and e.provider == "alibaba"
    assert e.sentence == (
        "Fallback: deepseek failed (429 → 503), so alibaba served the reply; "
        "the session now stays on alibaba."
    )


def test_fallback_inferred_from_attempts_without_affinity_block(clock: FakeClock) -> None:
    served = ServedBy(clock=clock)
    served.observe("s1", rec("cerebras", attempts=[("subconscious", 503), ("cerebras", 200)]))
    e = served.explain_affinity("s1")
    assert e is not None and e.outcome == "fallback"
    assert e.sentence.startswith("Fallback: subconscious failed (503), so cerebras served")


def test_gateway_outcome_wins_over_inference(clock: FakeClock) -> None:
    served = ServedBy(clock=clock)
    served.observe("s1", rec("subconscious", outcome="confirmed"))
    e = served.explain_affinity("s1")
    assert e is not None and e.outcome == "pinned"  # the gateway remembered it from before our restart
    served.observe("s2", rec("baseten"))
    clock.advance(5)
    served.observe("s2", rec("baseten", outcome="new"))
    e2 = served.explain_affinity("s2")
    assert e2 is not None and e2.outcome == "new pick"  # no session id reached the gateway


def test_bounded_memory(clock: FakeClock) -> None:
    served = ServedBy(max_sessions=3, per_session=2, clock=clock)
    for i in range(5):
        served.observe(f"s{i}", rec("a"))
    assert len(served) == 3 and served.latest("s0") is None and served.latest("s4") is not None
    for _ in range(4):
        served.observe("s4", rec("b"))
    assert len(served.history("s4")) == 2
    served.observe("s2", rec("c"))  # refreshed sessions move to the back of the eviction line
    served.observe("s9", rec("d"))
    assert served.latest("s2") is not None and served.latest("s3") is None
    assert served.latest_session() == "s9"


def test_latest_session_per_model(clock: FakeClock) -> None:
    served = ServedBy(clock=clock)
    served.observe("s1", rec("a"), model="m/one")
    served.observe("s2", rec("b"), model="m/two")
    assert served.latest_session("m/one") == "s1"
    # The gateway's canonical slug matches too (it may spell the model differently from the route id).
    assert served.latest_session("deepseek/deepseek-v4.1-flash-1017") == "s2"
    assert served.latest_session("m/three") is None
    assert served.latest_session() == "s2"


def test_record_to_dict_is_json_ready() -> None:
    r = rec("alibaba", attempts=[("deepseek", 429), ("alibaba", 200)])
    d = r.to_dict()
    assert orjson.loads(orjson.dumps(d)) == d
    assert d["attempts"][0] == {"provider": "deepseek", "status": 429, "success": False}
    assert copy.deepcopy(d) == d
