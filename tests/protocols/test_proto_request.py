"""Request translation details: the mapping table of streaming.md §4.5 and the Responses input items."""

from __future__ import annotations

import pytest

from modelpool.protocols.errors import ClientError
from modelpool.protocols.translate_request import (
    DEFAULT_MAX_TOKENS,
    anthropic_to_openai,
    drop_unsigned_thinking,
    openai_to_anthropic,
)
from modelpool.protocols.translate_responses import responses_to_anthropic, responses_to_openai


def oa(*messages: dict, **kw: object) -> dict:
    return {"model": "m", "messages": list(messages), **kw}


def test_system_and_developer_hoisted_and_defaults() -> None:
    out = openai_to_anthropic(
        oa(
            {"role": "system", "content": "be brief"},
            {"role": "developer", "content": [{"type": "text", "text": "x"}]},
            {"role": "user", "content": "hi"},
        )
    )
    assert out["system"] == "be brief\n\nx"
    assert out["messages"] == [{"role": "user", "content": "hi"}]
    assert out["max_tokens"] == DEFAULT_MAX_TOKENS


def test_scalar_parameters() -> None:
    out = openai_to_anthropic(
        oa(
            {"role": "user", "content": "hi"},
            max_completion_tokens=77,
            max_tokens=5,
            stop="END",
            temperature=1.7,
            top_p=0.9,
            user="u-1",
            stream=True,
            stream_options={"include_usage": True},
            seed=3,
            n=1,
        )
    )
    assert out["max_tokens"] == 77  # max_completion_tokens counts first
    assert out["stop_sequences"] == ["END"] and out["temperature"] == 1.0 and out["top_p"] == 0.9
    assert out["metadata"] == {"user_id": "u-1"} and out["stream"] is True
    assert "seed" not in out and "stream_options" not in out and "n" not in out
    back = anthropic_to_openai(
        {
            "model": "m",
            "max_tokens": 9,
            "messages": [{"role": "user", "content": "x"}],
            "stop_sequences": ["a"],
            "stream": True,
            "top_k": 5,
        }
    )
    assert back["stop"] == ["a"] and back["max_tokens"] == 9 and "top_k" not in back
    assert back["stream_options"] == {"include_usage": True}  # usage is requested upstream when streaming


def test_whitespace_only_stop_sequences_are_dropped() -> None:
    assert "stop_sequences" not in openai_to_anthropic(oa({"role": "user", "content": "x"}, stop=["\n"]))


def test_images_both_ways() -> None:
    msg = {
        "role": "user",
        "content": [
            {"type": "text", "text": "what is it"},
            {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,QUJD", "detail": "high"}},
            {"type": "image_url", "image_url": {"url": "https://x.example/cat.png"}},
        ],
    }
    out = openai_to_anthropic(oa(msg))
    blocks = out["messages"][0]["content"]
    assert blocks[1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/jpeg", "data": "QUJD"},
    }
    assert blocks[2] == {"type": "image", "source": {"type": "url", "url": "https://x.example/cat.png"}}
    back = anthropic_to_openai(out)
    assert back["messages"][0]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/jpeg;base64,QUJD"},
    }


@pytest.mark.parametrize(
    "part",
    [
        {"type": "input_audio", "input_audio": {"data": "x", "format": "wav"}},
        {"type": "video_url", "video_url": {"url": "https://x"}},
        {"type": "image_url", "image_url": {"url": "ftp://x/y.png"}},
        {"foo": 1},
    ],
)
def test_unknown_or_unsupported_parts_are_400_naming_the_type(part: dict) -> None:
    with pytest.raises(ClientError) as exc:
        openai_to_anthropic(oa({"role": "user", "content": [part]}))
    assert exc.value.status == 400
    kind = part.get("type")
    if kind and kind != "image_url":
        assert kind in exc.value.message


def test_unknown_anthropic_block_is_400() -> None:
    req = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "hologram"}]}]}
    with pytest.raises(ClientError, match="hologram"):
        anthropic_to_openai(req)


def test_tool_calls_and_results() -> None:
    out = openai_to_anthropic(
        oa(
            {"role": "user", "content": "weather?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "w", "arguments": '{"city": "Oslo"}'},
                    },
                    {"id": "c2", "type": "function", "function": {"name": "w", "arguments": "{broken"}},
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "cold"},
            {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "colder"}]},
            {"role": "user", "content": "thanks"},
        )
    )
    assistant, results = out["messages"][1], out["messages"][2]
    assert assistant["content"][0] == {"type": "tool_use", "id": "c1", "name": "w", "input": {"city": "Oslo"}}
    assert assistant["content"][1]["input"] == {"_raw_arguments": "{broken"}  # wrapped, never a crash
    assert [b["type"] for b in results["content"]] == ["tool_result", "tool_result", "text"]  # one user turn
    back = anthropic_to_openai(out)
    assert back["messages"][1]["tool_calls"][1]["function"]["arguments"] == "{broken"
    assert [m["role"] for m in back["messages"]] == ["user", "assistant", "tool", "tool", "user"]


def test_same_role_turns_merge() -> None:
    out = openai_to_anthropic(
        oa(
            {"role": "user", "content": "a"},
            {"role": "user", "content": "b"},
            {"role": "assistant", "content": "c"},
            {"role": "assistant", "content": ""},
        )
    )
    assert out["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"role": "assistant", "content": "c"},
    ]


def test_tools_and_choice_mapping() -> None:
    tools = [
        {"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}}
    ]
    out = openai_to_anthropic(
        oa({"role": "user", "content": "x"}, tools=tools, tool_choice="required", parallel_tool_calls=False)
    )
    assert out["tools"] == [{"name": "f", "description": "d", "input_schema": {"type": "object"}}]
    assert out["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}
    named = openai_to_anthropic(
        oa(
            {"role": "user", "content": "x"},
            tools=tools,
            tool_choice={"type": "function", "function": {"name": "f"}},
        )
    )
    assert named["tool_choice"] == {"type": "tool", "name": "f"}
    only_parallel = openai_to_anthropic(
        oa({"role": "user", "content": "x"}, tools=tools, parallel_tool_calls=False)
    )
    assert only_parallel["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    back = anthropic_to_openai(
        named | {"tools": [*named["tools"], {"type": "web_search_20250305", "name": "web_search"}]}
    )
    assert [t["function"]["name"] for t in back["tools"]] == ["f"]  # server tools dropped
    assert back["tool_choice"] == {"type": "function", "function": {"name": "f"}}
    with pytest.raises(ClientError, match="custom"):
        openai_to_anthropic(
            oa({"role": "user", "content": "x"}, tools=[{"type": "custom", "custom": {"name": "g"}}])
        )


def test_effort_is_translated_and_thinking_history_kept() -> None:
    req = oa(
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": "a",
            "reasoning_content": "hmm",
            "thinking_blocks": [{"type": "thinking", "thinking": "hmm", "signature": "SIG"}],
        },
        {"role": "user", "content": "q2"},
        reasoning_effort="medium",
    )
    out = openai_to_anthropic(req)
    assert out["thinking"] == {"type": "enabled", "budget_tokens": 8192}
    assert out["messages"][1]["content"][0] == {"type": "thinking", "thinking": "hmm", "signature": "SIG"}
    assert "reasoning_effort" not in out
    back = anthropic_to_openai(out)
    assert back["reasoning_effort"] == "medium" and "thinking" not in back
    assert back["messages"][1]["reasoning_content"] == "hmm"
    assert back["messages"][1]["thinking_blocks"] == [
        {"type": "thinking", "thinking": "hmm", "signature": "SIG"}
    ]
    assert "thinking_blocks" not in anthropic_to_openai(out, keep_signatures=False)["messages"][1]


def test_unsigned_reasoning_is_not_replayed_to_anthropic() -> None:
    out = openai_to_anthropic(
        oa(
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "a", "reasoning_content": "r"},
            {"role": "user", "content": "q2"},
        )
    )
    assert out["messages"][1] == {"role": "assistant", "content": "a"}
    shown = {
        "model": "m",
        "max_tokens": 5,
        "messages": [
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "r", "signature": ""},
                    {"type": "text", "text": "a"},
                ],
            },
        ],
    }
    assert drop_unsigned_thinking(shown)["messages"][1]["content"] == [{"type": "text", "text": "a"}]


def test_deepseek_tool_turns_carry_reasoning_content() -> None:
    req = {
        "model": "m",
        "max_tokens": 50,
        "thinking": {"type": "enabled", "budget_tokens": 4000},
        "messages": [
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "t1", "signature": "s"},
                    {"type": "tool_use", "id": "a", "name": "f", "input": {}},
                ],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "r"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "b", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b", "content": "r"}]},
        ],
    }
    out = anthropic_to_openai(req)
    assistants = [m for m in out["messages"] if m["role"] == "assistant"]
    assert [m["reasoning_content"] for m in assistants] == ["t1", ""]
    assert out["reasoning_effort"] == "medium"


def test_tool_result_images_follow_the_tool_message() -> None:
    req = {
        "model": "m",
        "max_tokens": 5,
        "messages": [
            {"role": "user", "content": "look"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "shot", "input": {}}]},
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "a",
                        "is_error": False,
                        "content": [
                            {"type": "text", "text": "here"},
                            {"type": "image", "source": {"type": "url", "url": "https://x.example/s.png"}},
                        ],
                    }
                ],
            },
        ],
    }
    out = anthropic_to_openai(req)
    assert out["messages"][2] == {"role": "tool", "tool_call_id": "a", "content": "here"}
    assert out["messages"][3]["content"] == [
        {"type": "image_url", "image_url": {"url": "https://x.example/s.png"}}
    ]


# ---------------------------------------------------------------- Responses


def test_responses_input_items() -> None:
    req = {
        "model": "m",
        "instructions": "be nice",
        "input": [
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "hi"},
                    {"type": "input_image", "image_url": "data:image/png;base64,QQ==", "detail": "low"},
                ],
            },
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [],
                "content": [{"type": "reasoning_text", "text": "think"}],
                "encrypted_content": "mp1.sig.SIG",
            },
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "calling"}]},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"a":1}'},
            {"type": "function_call_output", "call_id": "c1", "output": "42"},
            {"role": "user", "content": "and?"},
        ],
        "tools": [
            {"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": True},
            {"type": "web_search"},
        ],
        "tool_choice": {"type": "function", "name": "f"},
        "reasoning": {"effort": "low"},
        "max_output_tokens": 300,
        "stream": True,
        "text": {"format": {"type": "json_schema", "name": "out", "schema": {"type": "object"}}},
    }
    out = responses_to_openai(req)
    msgs = out["messages"]
    assert msgs[0] == {"role": "system", "content": "be nice"}
    assert msgs[1]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,QQ==", "detail": "low"},
    }
    assert msgs[2]["role"] == "assistant" and msgs[2]["content"] == "calling"
    assert msgs[2]["reasoning_content"] == "think"
    assert msgs[2]["thinking_blocks"] == [{"type": "thinking", "thinking": "think", "signature": "SIG"}]
    assert msgs[2]["tool_calls"] == [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}}
    ]
    assert msgs[3] == {"role": "tool", "tool_call_id": "c1", "content": "42"}
    assert msgs[4] == {"role": "user", "content": "and?"}
    assert [t["function"]["name"] for t in out["tools"]] == ["f"]
    assert out["tool_choice"] == {"type": "function", "function": {"name": "f"}}
    assert out["reasoning_effort"] == "low" and out["max_tokens"] == 300
    assert out["stream_options"] == {"include_usage": True}
    assert out["response_format"]["json_schema"]["name"] == "out"
    anth = responses_to_anthropic(req)
    assert anth["messages"][1]["content"][0] == {"type": "thinking", "thinking": "think", "signature": "SIG"}
    assert (
        anth["system"] == "be nice" and anth["max_tokens"] > 300
    )  # thinking budget on top of the answer room


def test_responses_string_input_and_refusals() -> None:
    assert responses_to_openai({"model": "m", "input": "hello"})["messages"] == [
        {"role": "user", "content": "hello"}
    ]
    with pytest.raises(ClientError, match="item_reference"):
        responses_to_openai({"model": "m", "input": [{"type": "item_reference", "id": "x"}]})
    with pytest.raises(ClientError, match="input_audio"):
        responses_to_openai({"model": "m", "input": [{"role": "user", "content": [{"type": "input_audio"}]}]})
    with pytest.raises(ClientError, match="file_id"):
        responses_to_openai(
            {"model": "m", "input": [{"role": "user", "content": [{"type": "input_image", "file_id": "f"}]}]}
        )


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "user", "content": None}],
        [{"role": "user", "content": [5]}],
        [{"role": "assistant", "content": ["x"]}],
        [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": [7]}]}],
    ],
)
def test_malformed_anthropic_content_is_a_client_error(messages: list) -> None:
    with pytest.raises(ClientError):
        anthropic_to_openai({"model": "m", "max_tokens": 5, "messages": messages})


def test_wrong_shapes_are_client_errors_not_crashes() -> None:
    with pytest.raises(ClientError) as exc:
        openai_to_anthropic(oa({"role": "assistant", "content": None, "tool_calls": True}))
    assert exc.value.status == 400
    with pytest.raises(ClientError):
        bad_text = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": 5}]}
        responses_to_openai({"model": "m", "input": [bad_text]})
