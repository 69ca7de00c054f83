"""Upstream overflow errors recognised in their own words, and said back in each dialect's (issue #30)."""

from __future__ import annotations

import orjson
import pytest

from modelpool.agents import codex
from modelpool.protocols.overflow import already_said, fill, overflow_body, parse_overflow


@pytest.mark.parametrize(
    ("text", "tokens", "maximum"),
    [
        (
            "request (3031 tokens) exceeds the available context size (2048 tokens), try increasing it",
            3031,
            2048,
        ),
        (
            "This model's maximum context length is 131072 tokens. However, you requested 140000 tokens "
            "(139000 in the messages, 1000 in the completion). Please reduce the length of the messages.",
            140000,
            131072,
        ),
        (
            "This model's maximum context length is 128000 tokens. However, your messages resulted in "
            "130001 tokens. Please reduce the length of the messages.",
            130001,
            128000,
        ),
        ("prompt is too long: 210000 tokens > 200000 maximum", 210000, 200000),
        (
            "The input token count (1100000) exceeds the maximum number of tokens allowed (1048576).",
            1100000,
            1048576,
        ),
    ],
    ids=["llama.cpp", "deepseek", "openai", "anthropic", "gemini"],
)
def test_an_upstreams_overflow_and_its_numbers(text: str, tokens: int, maximum: int) -> None:
    found = parse_overflow(text)
    assert found is not None and (found.tokens, found.maximum) == (tokens, maximum)


def test_other_errors_are_not_overflows() -> None:
    assert parse_overflow("invalid api key") is None
    assert parse_overflow("max_tokens: must be at most 8192") is None
    found = parse_overflow(
        '{"error": {"code": "context_length_exceeded", "message": "Your input is too long"}}'
    )
    assert found is not None and found.tokens is None
    # numbers the upstream left out: its window (else the route's), and never N ≤ M
    assert fill(found, 900, 2048) == (2049, 2048)


def test_each_dialect_says_it_in_its_own_words() -> None:
    an = orjson.loads(overflow_body("anthropic", 3031, 2048))
    assert an == {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 3031 tokens > 2048 maximum",
        },
    }
    for dialect, param in (("openai", "messages"), ("responses", "input")):
        err = orjson.loads(overflow_body(dialect, 3031, 2048))["error"]
        assert err["code"] == "context_length_exceeded" and err["param"] == param
        assert err["message"].startswith("This model's maximum context length is 2048 tokens. However, your")
    gemini = orjson.loads(overflow_body("gemini", 3031, 2048))["error"]
    assert gemini == {
        "code": 400,
        "status": "INVALID_ARGUMENT",
        "message": "The input token count (3031) exceeds the maximum number of tokens allowed (2048).",
    }
    for dialect in ("anthropic", "openai", "responses", "gemini"):
        assert already_said(dialect, overflow_body(dialect, 3031, 2048))
    assert not already_said("anthropic", overflow_body("openai", 3031, 2048))


def test_the_codex_template_is_never_a_code_mode_only_entry() -> None:
    code_mode = {"slug": "gpt-6.2-sol", "apply_patch_tool_type": "freeform", "tool_mode": "code_mode_only"}
    plain = {"slug": "gpt-6-luna", "apply_patch_tool_type": "freeform", "visibility": "list"}
    preferred = {"slug": "gpt-5.5", "apply_patch_tool_type": "freeform", "visibility": "list"}
    assert codex.pick_template([code_mode, plain]) is plain
    assert codex.pick_template([code_mode, plain, preferred]) is preferred
    with pytest.raises(ValueError):
        codex.pick_template([code_mode, {"slug": "x", "apply_patch_tool_type": "function"}])
    entry = codex.model_info(
        codex.shipped_template(), {"id": "p", "agent_context_window": 10000, "efforts": ["off", "max"]}
    )
    assert entry["slug"] == "p" and entry["auto_compact_token_limit"] == 9000
    assert [lv["effort"] for lv in entry["supported_reasoning_levels"]] == ["max"]
    assert entry["apply_patch_tool_type"] == "freeform" and entry["upgrade"] is None
