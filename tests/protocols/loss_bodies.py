"""Hypothesis strategies for client request bodies in the three dialects, shaped like what Claude Code, Codex
and chat agents send, with every free-text value a sentinel token (`Q<10 hex>Q`) and random unknown keys:
the generators of `test_proto_loss_property`."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import strategies as st

token = st.text(alphabet="0123456789abcdef", min_size=10, max_size=10).map(lambda h: f"Q{h}Q")


@st.composite
def extra(draw: st.DrawFn, obj: dict[str, Any]) -> dict[str, Any]:
    """Sometimes an unknown key (which the translators drop) on an object (a copy: sampled values are
    shared between examples)."""
    obj = dict(obj)
    if draw(st.integers(0, 4)) == 0:
        obj[f"x_{draw(token)}"] = draw(token)
    return obj


def maybe(draw: st.DrawFn, obj: dict[str, Any], key: str, value: st.SearchStrategy[Any]) -> None:
    if draw(st.booleans()):
        obj[key] = draw(value)


cache = st.sampled_from([{"type": "ephemeral"}, {"type": "ephemeral", "ttl": "1h"}])


@st.composite
def anthropic_body(draw: st.DrawFn) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for turn in range(draw(st.integers(1, 4))):
        if turn % 2 == 0:
            messages.append({"role": "user", "content": draw(anthropic_user_content())})
        else:
            messages.append({"role": "assistant", "content": draw(anthropic_assistant_content())})
    body: dict[str, Any] = {"model": "m", "max_tokens": draw(st.integers(16, 9000)), "messages": messages}
    sys_blocks = st.lists(
        st.builds(
            lambda t, c: {"type": "text", "text": t, **c},
            token,
            st.sampled_from([{}, {"cache_control": {"type": "ephemeral"}}]),
        ),
        min_size=1,
        max_size=2,
    )
    maybe(draw, body, "system", st.one_of(token, sys_blocks))
    maybe(draw, body, "temperature", st.floats(0, 1))
    maybe(draw, body, "top_p", st.floats(0.1, 1))
    maybe(draw, body, "top_k", st.integers(1, 100))
    maybe(draw, body, "stop_sequences", st.lists(token, min_size=1, max_size=2))
    maybe(draw, body, "metadata", st.builds(lambda u: {"user_id": u}, token))
    maybe(draw, body, "stream", st.booleans())
    maybe(
        draw,
        body,
        "thinking",
        st.sampled_from([{"type": "enabled", "budget_tokens": 2048}, {"type": "adaptive"}]),
    )
    maybe(draw, body, "context_management", st.just({"edits": [{"type": "clear_tool_uses_20250919"}]}))
    maybe(draw, body, "output_config", st.sampled_from([{"effort": "high"}, {"effort": "low"}]))
    maybe(draw, body, "service_tier", st.just("auto"))
    if draw(st.booleans()):
        tools = draw(st.lists(anthropic_tool(), min_size=1, max_size=3))
        body["tools"] = tools
        maybe(
            draw,
            body,
            "tool_choice",
            st.sampled_from(
                [
                    {"type": "auto"},
                    {"type": "any"},
                    {"type": "auto", "disable_parallel_tool_use": True},
                    {"type": "none"},
                ]
            ),
        )
    return draw(extra(body))


@st.composite
def anthropic_tool(draw: st.DrawFn) -> dict[str, Any]:
    if draw(st.integers(0, 3)) == 0:
        return draw(
            st.sampled_from(
                [
                    {"type": "web_search_20250305", "name": "web_search", "max_uses": 5},
                    {"type": "web_fetch_20250910", "name": "web_fetch"},
                    {"type": "bash_20250124", "name": "bash"},
                ]
            )
        )
    tool: dict[str, Any] = {
        "name": draw(token),
        "input_schema": {"type": "object", "properties": {draw(token): {"type": "string"}}},
    }
    maybe(draw, tool, "description", token)
    maybe(draw, tool, "cache_control", cache)
    return draw(extra(tool))


@st.composite
def anthropic_user_content(draw: st.DrawFn) -> Any:
    if draw(st.booleans()):
        return draw(token)
    blocks = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["text", "image", "document", "tool_result", "search_result"]))
        if kind == "text":
            b: dict[str, Any] = {"type": "text", "text": draw(token)}
            maybe(draw, b, "cache_control", cache)
        elif kind == "image":
            b = {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": draw(token)},
            }
        elif kind == "document":
            b = {
                "type": "document",
                "source": {"type": "base64", "media_type": "application/pdf", "data": draw(token)},
            }
            maybe(draw, b, "title", token)
            maybe(draw, b, "citations", st.sampled_from([{"enabled": True}, {"enabled": False}]))
            maybe(draw, b, "context", token)
        elif kind == "tool_result":
            content = st.one_of(
                token,
                st.lists(st.builds(lambda t: {"type": "text", "text": t}, token), min_size=1, max_size=2),
            )
            b = {"type": "tool_result", "tool_use_id": draw(token), "content": draw(content)}
            maybe(draw, b, "is_error", st.just(True))
            maybe(draw, b, "cache_control", cache)
        else:
            b = {"type": "search_result", "source": draw(token), "title": draw(token), "content": []}
        blocks.append(draw(extra(b)))
    return blocks


@st.composite
def anthropic_assistant_content(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 3)) == 0:
        return draw(token)
    blocks = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["text", "thinking", "redacted", "tool_use", "server"]))
        if kind == "text":
            b: dict[str, Any] = {"type": "text", "text": draw(token)}
            maybe(
                draw,
                b,
                "citations",
                st.builds(lambda t: [{"type": "web_search_result_location", "url": t}], token),
            )
        elif kind == "thinking":
            b = {"type": "thinking", "thinking": draw(token), "signature": draw(token)}
        elif kind == "redacted":
            b = {"type": "redacted_thinking", "data": draw(token)}
        elif kind == "tool_use":
            b = {"type": "tool_use", "id": draw(token), "name": draw(token), "input": {"q": draw(token)}}
            maybe(draw, b, "cache_control", cache)
        else:
            b = draw(
                st.sampled_from(
                    [
                        {
                            "type": "server_tool_use",
                            "id": "srvtoolu_1",
                            "name": "web_search",
                            "input": {"query": "q"},
                        },
                        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
                    ]
                )
            )
        blocks.append(draw(extra(b)))
    return blocks


@st.composite
def chat_body(draw: st.DrawFn) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    if draw(st.booleans()):
        sys_content = st.one_of(
            token,
            st.lists(
                st.builds(
                    lambda t, c: {"type": "text", "text": t, **c},
                    token,
                    st.sampled_from([{}, {"cache_control": {"type": "ephemeral"}}]),
                ),
                min_size=1,
                max_size=2,
            ),
        )
        messages.append(
            draw(
                extra({"role": draw(st.sampled_from(["system", "developer"])), "content": draw(sys_content)})
            )
        )
    for turn in range(draw(st.integers(1, 4))):
        messages.append(draw(chat_message(turn % 2 == 0)))
    body: dict[str, Any] = {"model": "m", "messages": messages}
    maybe(draw, body, draw(st.sampled_from(["max_tokens", "max_completion_tokens"])), st.integers(16, 9000))
    maybe(draw, body, "temperature", st.floats(0, 2))
    maybe(draw, body, "top_p", st.floats(0.1, 1))
    maybe(
        draw, body, "stop", st.one_of(token, st.lists(st.one_of(token, st.just(" ")), min_size=1, max_size=2))
    )
    maybe(draw, body, "user", token)
    maybe(draw, body, "stream", st.booleans())
    maybe(draw, body, "stream_options", st.just({"include_usage": True}))
    maybe(draw, body, "reasoning_effort", st.sampled_from(["low", "medium", "high"]))
    maybe(draw, body, "n", st.sampled_from([1, 2]))
    maybe(draw, body, "seed", st.integers(0, 9))
    maybe(draw, body, "frequency_penalty", st.floats(0, 1))
    maybe(draw, body, "logprobs", st.booleans())
    maybe(draw, body, "metadata", st.builds(lambda t: {"k": t}, token))
    maybe(draw, body, "store", st.booleans())
    maybe(draw, body, "prompt_cache_key", token)
    maybe(draw, body, "web_search_options", st.just({"search_context_size": "low"}))
    maybe(
        draw,
        body,
        "response_format",
        st.one_of(
            st.just({"type": "json_object"}),
            st.just({"type": "text"}),
            st.builds(
                lambda n: {
                    "type": "json_schema",
                    "json_schema": {"name": n, "strict": True, "schema": {"type": "object"}},
                },
                token,
            ),
        ),
    )
    if draw(st.booleans()):
        fn = st.builds(
            lambda n, d: {
                "type": "function",
                "function": {"name": n, "description": d, "parameters": {"type": "object"}},
            },
            token,
            token,
        )
        body["tools"] = draw(st.lists(fn.flatmap(lambda t: extra(t)), min_size=1, max_size=2))
        maybe(draw, body, "tool_choice", st.sampled_from(["auto", "required", "none"]))
        maybe(draw, body, "parallel_tool_calls", st.booleans())
    elif draw(st.booleans()):
        body["parallel_tool_calls"] = False
    return draw(extra(body))


@st.composite
def chat_message(draw: st.DrawFn, user: bool) -> dict[str, Any]:
    if user:
        kind = draw(st.sampled_from(["user", "user_parts", "tool"]))
        if kind == "user":
            return draw(extra({"role": "user", "content": draw(token)}))
        if kind == "tool":
            return draw(extra({"role": "tool", "tool_call_id": draw(token), "content": draw(token)}))
        parts = []
        for _ in range(draw(st.integers(1, 3))):
            pk = draw(st.sampled_from(["text", "image", "file", "audio"]))
            if pk == "text":
                p: dict[str, Any] = {"type": "text", "text": draw(token)}
                maybe(draw, p, "cache_control", cache)
            elif pk == "image":
                img: dict[str, Any] = {"url": "data:image/png;base64," + draw(token)}
                maybe(draw, img, "detail", st.sampled_from(["low", "high"]))
                p = {"type": "image_url", "image_url": img}
            elif pk == "file":
                f: dict[str, Any] = {"file_data": "data:application/pdf;base64," + draw(token)}
                maybe(draw, f, "filename", token)
                p = {"type": "file", "file": f}
            else:
                p = {"type": "input_audio", "input_audio": {"data": draw(token), "format": "wav"}}
            parts.append(draw(extra(p)))
        msg: dict[str, Any] = {"role": "user", "content": parts}
        maybe(draw, msg, "name", token)
        return draw(extra(msg))
    msg = {"role": "assistant", "content": draw(st.one_of(st.none(), token))}
    if draw(st.booleans()):
        msg["tool_calls"] = [
            {
                "id": draw(token),
                "type": "function",
                "function": {"name": draw(token), "arguments": orjson.dumps({"a": draw(token)}).decode()},
            }
        ]
    maybe(draw, msg, "reasoning_content", token)
    maybe(
        draw,
        msg,
        "thinking_blocks",
        st.lists(
            st.one_of(
                st.builds(lambda t, s: {"type": "thinking", "thinking": t, "signature": s}, token, token),
                st.builds(lambda t: {"type": "thinking", "thinking": t}, token),
                st.builds(lambda d: {"type": "redacted_thinking", "data": d}, token),
            ),
            min_size=1,
            max_size=2,
        ),
    )
    maybe(draw, msg, "refusal", token)
    return draw(extra(msg))


SEALED = st.one_of(token.map(lambda t: "mp1.sig." + t), token.map(lambda t: "mp1.red." + t), token)


@st.composite
def responses_body(draw: st.DrawFn) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "m"}
    if draw(st.integers(0, 4)) == 0:
        body["input"] = draw(token)
    else:
        body["input"] = draw(st.lists(responses_item(), min_size=1, max_size=6))
    maybe(draw, body, "instructions", token)
    maybe(draw, body, "max_output_tokens", st.integers(16, 9000))
    maybe(draw, body, "temperature", st.floats(0, 2))
    maybe(draw, body, "top_p", st.floats(0.1, 1))
    maybe(draw, body, "stream", st.booleans())
    maybe(draw, body, "store", st.booleans())
    maybe(draw, body, "prompt_cache_key", token)
    maybe(
        draw,
        body,
        "include",
        st.sampled_from(
            [["reasoning.encrypted_content"], ["reasoning.encrypted_content", "message.output_text.logprobs"]]
        ),
    )
    maybe(draw, body, "user", token)
    maybe(draw, body, "safety_identifier", token)
    maybe(draw, body, "metadata", st.builds(lambda t: {"k": t}, token))
    maybe(draw, body, "service_tier", st.just("auto"))
    maybe(draw, body, "truncation", st.just("auto"))
    maybe(draw, body, "previous_response_id", token)
    maybe(
        draw, body, "reasoning", st.sampled_from([{"effort": "high"}, {"effort": "low", "summary": "auto"}])
    )
    maybe(
        draw,
        body,
        "text",
        st.one_of(
            st.just({"verbosity": "low"}),
            st.just({"format": {"type": "text"}}),
            st.just({"format": {"type": "json_object"}}),
            st.builds(
                lambda n: {
                    "format": {"type": "json_schema", "name": n, "strict": True, "schema": {"type": "object"}}
                },
                token,
            ),
        ),
    )
    if draw(st.booleans()):
        body["tools"] = draw(st.lists(responses_tool(), min_size=1, max_size=4))
        maybe(
            draw, body, "tool_choice", st.sampled_from(["auto", "required", "none", {"type": "local_shell"}])
        )
    maybe(draw, body, "parallel_tool_calls", st.booleans())
    return draw(extra(body))


@st.composite
def responses_tool(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["function", "custom", "local_shell", "hosted"]))
    if kind == "function":
        tool: dict[str, Any] = {"type": "function", "name": draw(token), "parameters": {"type": "object"}}
        maybe(draw, tool, "description", token)
        maybe(draw, tool, "strict", st.booleans())
    elif kind == "custom":
        tool = {"type": "custom", "name": draw(token), "description": draw(token)}
        maybe(
            draw,
            tool,
            "format",
            st.builds(lambda d: {"type": "grammar", "syntax": "lark", "definition": d}, token),
        )
    elif kind == "local_shell":
        tool = {"type": "local_shell"}
    else:
        tool = draw(
            st.sampled_from([{"type": "web_search"}, {"type": "file_search", "vector_store_ids": ["vs"]}])
        )
    return draw(extra(tool))


@st.composite
def responses_item(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(
        st.sampled_from(
            [
                "user",
                "assistant",
                "function_call",
                "function_call_output",
                "custom_tool_call",
                "custom_tool_call_output",
                "local_shell_call",
                "local_shell_call_output",
                "reasoning",
            ]
        )
    )
    if kind == "user":
        parts = []
        for _ in range(draw(st.integers(1, 2))):
            pk = draw(st.sampled_from(["text", "image", "file"]))
            if pk == "text":
                p: dict[str, Any] = {"type": "input_text", "text": draw(token)}
            elif pk == "image":
                p = {"type": "input_image", "image_url": "data:image/png;base64," + draw(token)}
                maybe(draw, p, "detail", st.sampled_from(["low", "auto"]))
            else:
                p = {"type": "input_file", "file_data": "data:application/pdf;base64," + draw(token)}
                maybe(draw, p, "filename", token)
            parts.append(draw(extra(p)))
        item: dict[str, Any] = {"role": draw(st.sampled_from(["user", "developer"])), "content": parts}
        if draw(st.booleans()):
            item["type"] = "message"
    elif kind == "assistant":
        part: dict[str, Any] = {"type": "output_text", "text": draw(token), "annotations": []}
        if draw(st.integers(0, 3)) == 0:
            part["annotations"] = [
                {"type": "url_citation", "url": draw(token), "start_index": 0, "end_index": 1}
            ]
        item = {
            "type": "message",
            "role": "assistant",
            "content": [part],
            "id": "msg_1",
            "status": "completed",
        }
    elif kind == "function_call":
        item = {
            "type": "function_call",
            "call_id": draw(token),
            "name": draw(token),
            "arguments": orjson.dumps({"a": draw(token)}).decode(),
        }
    elif kind == "custom_tool_call":
        item = {"type": "custom_tool_call", "call_id": draw(token), "name": draw(token), "input": draw(token)}
    elif kind == "local_shell_call":
        action: dict[str, Any] = {"type": "exec", "command": [draw(token)], "env": {}}
        maybe(draw, action, "working_directory", token)
        maybe(draw, action, "timeout_ms", st.integers(1, 9999))
        item = {
            "type": "local_shell_call",
            "id": "lsh_1",
            "call_id": draw(token),
            "action": action,
            "status": "completed",
        }
    elif kind == "reasoning":
        item = {"type": "reasoning", "id": "rs_1", "summary": []}
        if draw(st.booleans()):
            item["summary"] = [{"type": "summary_text", "text": draw(token)}]
        maybe(draw, item, "content", st.builds(lambda t: [{"type": "reasoning_text", "text": t}], token))
        maybe(draw, item, "encrypted_content", SEALED)
    else:
        output = st.one_of(
            token,
            st.lists(st.builds(lambda t: {"type": "input_text", "text": t}, token), min_size=1, max_size=2),
        )
        key = "id" if kind == "local_shell_call_output" and draw(st.booleans()) else "call_id"
        item = {"type": kind, key: draw(token), "output": draw(output)}
    return draw(extra(item))


@st.composite
def gemini_part(draw: st.DrawFn, model: bool) -> dict[str, Any]:
    kinds = ["text", "thought", "call", "fdata"] if model else ["text", "response", "image", "pdf", "code"]
    kind = draw(st.sampled_from(kinds))
    if kind == "text":
        part: dict[str, Any] = {"text": draw(token)}
    elif kind == "thought":
        part = {"text": draw(token), "thought": True}
    elif kind == "call":
        call = {"name": draw(token), "args": {"a": draw(token)}}
        maybe(draw, call, "id", token)
        part = {"functionCall": draw(extra(call))}
    elif kind == "response":
        resp = {"name": draw(token), "response": {"output": draw(token)}}
        maybe(draw, resp, "id", token)
        part = {"functionResponse": draw(extra(resp))}
    elif kind == "image":
        part = {"inlineData": draw(extra({"mimeType": "image/png", "data": draw(token)}))}
    elif kind == "pdf":
        part = {"inlineData": {"mimeType": "application/pdf", "data": draw(token)}}
    elif kind == "fdata":
        part = {"fileData": {"mimeType": "text/plain", "fileUri": draw(token)}}
    else:
        part = {"executableCode": {"language": "PYTHON", "code": draw(token)}}
    maybe(draw, part, "thoughtSignature", st.one_of(token, st.just("skip_thought_signature_validator")))
    return draw(extra(part))


@st.composite
def gemini_body(draw: st.DrawFn) -> dict[str, Any]:
    """What Gemini CLI and the google-genai SDKs send, as the ingress parses it (model, stream: the URL)."""
    contents = [
        draw(
            extra(
                {
                    "role": "model" if turn % 2 else "user",
                    "parts": draw(st.lists(gemini_part(bool(turn % 2)), min_size=1, max_size=3)),
                }
            )
        )
        for turn in range(draw(st.integers(1, 4)))
    ]
    body: dict[str, Any] = {"model": "m", "stream": draw(st.booleans()), "contents": contents}
    maybe(draw, body, "systemInstruction", st.builds(lambda t: {"parts": [{"text": t}]}, token))
    config: dict[str, Any] = {}
    maybe(draw, config, "temperature", st.floats(0, 2))
    maybe(draw, config, "topP", st.floats(0.1, 1))
    maybe(draw, config, "topK", st.integers(1, 64))
    maybe(draw, config, "maxOutputTokens", st.integers(16, 9000))
    maybe(draw, config, "stopSequences", st.lists(token, min_size=1, max_size=2))
    maybe(draw, config, "seed", st.integers(0, 9))
    maybe(draw, config, "candidateCount", st.sampled_from([1, 2]))
    maybe(draw, config, "responseJsonSchema", st.just({"type": "object"}))
    maybe(
        draw,
        config,
        "thinkingConfig",
        st.sampled_from(
            [
                {"includeThoughts": True, "thinkingBudget": 8192},
                {"thinkingLevel": "HIGH"},
                {"thinkingBudget": 0},
            ]
        ),
    )
    if config:
        body["generationConfig"] = draw(extra(config))
    if draw(st.booleans()):
        decl = st.builds(
            lambda n, d, schema: {"name": n, "description": d, **schema},
            token,
            token,
            st.sampled_from(
                [
                    {"parametersJsonSchema": {"type": "object"}},
                    {"parameters": {"type": "OBJECT", "properties": {"q": {"type": "STRING"}}}},
                ]
            ),
        )
        tools: list[dict[str, Any]] = [
            {"functionDeclarations": draw(st.lists(decl.flatmap(lambda t: extra(t)), min_size=1, max_size=2))}
        ]
        if draw(st.booleans()):
            tools.append(draw(st.sampled_from([{"googleSearch": {}}, {"codeExecution": {}}])))
        body["tools"] = tools
        maybe(
            draw,
            body,
            "toolConfig",
            st.sampled_from([{"functionCallingConfig": {"mode": m}} for m in ("AUTO", "ANY", "NONE")]),
        )
    maybe(
        draw, body, "safetySettings", st.just([{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "OFF"}])
    )
    maybe(draw, body, "cachedContent", st.just("cachedContents/abc"))
    return draw(extra(body))


BODIES = {
    "responses": responses_body(),
    "anthropic": anthropic_body(),
    "openai": chat_body(),
    "gemini": gemini_body(),
}
