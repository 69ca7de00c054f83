"""Client-side stream encoders: dialect-neutral stream operations → OpenAI chunks / Anthropic events.

An encoder is the persistent half of a `StreamTranslator`: it lives for the whole client call, across
upstream attempts, so everything the client has already seen (message_start, block indices, the role
chunk) is never repeated. Upstream decoders call its operations; it appends wire bytes to `out`.

Operations: reasoning(text) · signature(sig) · redacted(data) · text(text) · refusal(text) ·
tool_start(key, id, name) · tool_args(key, fragment) · ping() · new_attempt() · finish(end) · error().

Nothing is emitted before the first reasoning/answer operation: the lifecycle preamble (message_start,
role chunk) goes out together with it, so a route that fails before saying anything leaves no trace and
response headers can wait for the first meaningful byte. Per-delta encoding concatenates pre-encoded
fragments around one `orjson.dumps` of the delta string: no dict is built on the hot path.
"""

from __future__ import annotations

from typing import Any

import orjson

from modelpool.protocols.mapping import (
    anthropic_stop,
    new_id,
    now,
    openai_finish,
    usage_to_anthropic,
    usage_to_openai,
)

dumps = orjson.dumps


class StreamEnd:
    """How the stream ended, as far as the upstream(s) said: filled by decoders, read by `finish`."""

    __slots__ = ("chars", "dropped", "finish_reason", "meta", "stop_reason", "stop_sequence", "usage")

    def __init__(self) -> None:
        self.finish_reason: str | None = None  # OpenAI vocabulary, when the upstream spoke OpenAI
        self.stop_reason: str | None = None  # Anthropic vocabulary, when the upstream spoke Anthropic
        self.stop_sequence: str | None = None
        self.usage: dict[str, int] | None = None
        self.meta: dict[str, Any] | None = None
        self.chars = 0  # characters of reasoning/text/arguments decoded: the fallback usage estimate
        # What the upstream sent that the client's dialect cannot express (server-tool blocks,
        # citations, annotations), for `x-modelpool-dropped` / metadata `dropped` (loss.py).
        self.dropped: list[str] = []

    def usage_or_estimate(self, input_tokens: int) -> dict[str, int]:
        """The upstream's usage, or — when it never sent any (cut before its usage chunk, or a
        provider that ignores include_usage) — an estimate (chars / 4), so a client that asked for
        usage always gets numbers rather than null."""
        if self.usage is not None:
            return self.usage
        completion = (self.chars + 3) // 4
        usage = {"prompt_tokens": input_tokens, "completion_tokens": completion}
        usage |= {"total_tokens": input_tokens + completion, "cached_tokens": 0}
        return usage | {"cache_creation_tokens": 0, "reasoning_tokens": 0}

    def openai_reason(self) -> str:
        return self.finish_reason or openai_finish(self.stop_reason)

    def anthropic_reason(self) -> str:
        return self.stop_reason or anthropic_stop(self.finish_reason)


class Encoder:
    """Base: the commit bookkeeping every client dialect shares."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.out: list[bytes] = []
        self.started = False
        self.meaningful = False  # reasoning or content emitted
        self.committed = False  # content (answer text, refusal, tool call) emitted
        self.input_tokens = 0  # message_start's input usage (known early only from Anthropic upstreams)

    def take(self) -> bytes:
        if not self.out:
            return b""
        data = b"".join(self.out)
        self.out.clear()
        return data

    # Subclasses implement the operations listed in the module docstring.
    def reasoning(self, text: str) -> None: ...
    def signature(self, sig: str) -> None: ...
    def redacted(self, data: str) -> None: ...
    def text(self, text: str) -> None: ...
    def refusal(self, text: str) -> None: ...
    def tool_start(self, key: Any, call_id: str, name: str) -> None: ...
    def tool_args(self, key: Any, fragment: str) -> None: ...
    def ping(self) -> None: ...
    def new_attempt(self) -> None: ...
    def finish(self, end: StreamEnd) -> None: ...
    def error(self, message: str, type: str) -> bytes:
        raise NotImplementedError


# ---------------------------------------------------------------- Anthropic client

_A_DELTA = b'event: content_block_delta\ndata: {"type":"content_block_delta","index":'
_A_TEXT = b',"delta":{"type":"text_delta","text":'
_A_THINK = b',"delta":{"type":"thinking_delta","thinking":'
_A_SIG = b',"delta":{"type":"signature_delta","signature":'
_A_JSON = b',"delta":{"type":"input_json_delta","partial_json":'
_A_END = b"}}\n\n"
_A_START = b'event: content_block_start\ndata: {"type":"content_block_start","index":'
_A_STOP = b'event: content_block_stop\ndata: {"type":"content_block_stop","index":'
_A_TEXT_BLOCK = b',"content_block":{"type":"text","text":""}}\n\n'
_A_THINK_BLOCK = b',"content_block":{"type":"thinking","thinking":"","signature":""}}\n\n'
_A_MESSAGE_STOP = b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
_A_PING = b'event: ping\ndata: {"type":"ping"}\n\n'


class AnthropicEncoder(Encoder):
    """OpenAI-shaped operations → Anthropic Messages events (streaming.md §4.4, second half).

    One block open at a time; a change of kind, a new tool call, a signed thinking block receiving more
    thinking, or a new upstream attempt closes it and opens the next at index + 1."""

    def __init__(self, model: str, message_id: str | None = None) -> None:
        super().__init__(model)
        self.message_id = message_id or new_id("msg_")
        self._open: str | None = None  # "text" | "thinking" | "tool"
        self._open_key: Any = None
        self._index = -1
        self._ib = b""  # current block index, encoded
        self._signed = False  # the open thinking block got its signature: more thinking = new block
        self._break = False  # new upstream attempt: the next operation opens a fresh block

    def _start(self) -> None:
        self.started = True
        message: dict[str, Any] = {
            "id": self.message_id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": self.input_tokens, "output_tokens": 0},
        }
        self.out.append(
            b"event: message_start\ndata: " + dumps({"type": "message_start", "message": message}) + b"\n\n"
        )

    def _close(self) -> None:
        if self._open is not None:
            self.out.append(_A_STOP + self._ib + b"}\n\n")
            self._open = None

    def _begin(self, kind: str, block: bytes) -> None:
        if not self.started:
            self._start()
        self._close()
        self._index += 1
        self._ib = str(self._index).encode()
        self._open, self._signed, self._break = kind, False, False
        self.out.append(_A_START + self._ib + block)

    def reasoning(self, text: str) -> None:
        if self._open != "thinking" or self._signed or self._break:
            self._begin("thinking", _A_THINK_BLOCK)
        self.meaningful = True
        self.out.append(_A_DELTA + self._ib + _A_THINK + dumps(text) + _A_END)

    def signature(self, sig: str) -> None:
        if self._open != "thinking" or self._signed or self._break:
            self._begin("thinking", _A_THINK_BLOCK)
        self.meaningful = True
        self._signed = True
        self.out.append(_A_DELTA + self._ib + _A_SIG + dumps(sig) + _A_END)

    def redacted(self, data: str) -> None:
        self._begin(
            "redacted", b',"content_block":' + dumps({"type": "redacted_thinking", "data": data}) + b"}\n\n"
        )
        self.meaningful = True
        self._close()

    def text(self, text: str) -> None:
        if self._open != "text" or self._break:
            self._begin("text", _A_TEXT_BLOCK)
        self.meaningful = self.committed = True
        self.out.append(_A_DELTA + self._ib + _A_TEXT + dumps(text) + _A_END)

    refusal = text  # Anthropic has no refusal part: the text is the refusal, stop_reason says so

    def tool_start(self, key: Any, call_id: str, name: str) -> None:
        block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        self._begin("tool", b',"content_block":' + dumps(block) + b"}\n\n")
        self._open_key = key
        self.meaningful = self.committed = True

    def tool_args(self, key: Any, fragment: str) -> None:
        # Blocks are strictly sequential: fragments continue the open tool block. A fragment for an
        # earlier call (interleaved parallel calls, not seen from real providers) cannot go back into
        # a closed block; it is appended to the open one only if it is the same call.
        if self._open == "tool" and self._open_key == key and fragment:
            self.out.append(_A_DELTA + self._ib + _A_JSON + dumps(fragment) + _A_END)

    def ping(self) -> None:
        if self.started:
            self.out.append(_A_PING)

    def new_attempt(self) -> None:
        self._break = True

    def finish(self, end: StreamEnd) -> None:
        if not self.started:
            self._start()
        self._close()
        usage = usage_to_anthropic(end.usage_or_estimate(self.input_tokens))
        delta = {"stop_reason": end.anthropic_reason(), "stop_sequence": end.stop_sequence}
        obj: dict[str, Any] = {"type": "message_delta", "delta": delta, "usage": usage}
        if end.meta is not None:
            obj["modelpool"] = end.meta
        self.out.append(b"event: message_delta\ndata: " + dumps(obj) + b"\n\n" + _A_MESSAGE_STOP)

    def error(self, message: str, type: str) -> bytes:
        obj = {"type": "error", "error": {"type": type, "message": message}}
        return self.take() + b"event: error\ndata: " + dumps(obj) + b"\n\n"


# ---------------------------------------------------------------- OpenAI client

_O_TAIL = b',"logprobs":null,"finish_reason":null}]}\n\n'


class OpenAIEncoder(Encoder):
    """Anthropic-shaped operations → chat.completion.chunk (streaming.md §4.4, first half).

    Thinking → `delta.reasoning_content`. Signatures never reach `content`: when a thinking block is
    signed, one chunk carries the whole block in the LiteLLM side field `delta.thinking_blocks`, which
    `translate_request` reads back if the client returns it on the assistant message."""

    def __init__(self, model: str, include_usage: bool = False, chunk_id: str | None = None) -> None:
        super().__init__(model)
        self.include_usage = include_usage
        self.chunk_id = chunk_id or new_id("chatcmpl-")
        self.created = now()
        self._head = (
            b'data: {"id":'
            + dumps(self.chunk_id)
            + b',"object":"chat.completion.chunk","created":'
            + str(self.created).encode()
            + b',"model":'
            + dumps(model)
        )
        self._prefix = self._head + b',"choices":[{"index":0,"delta":'
        self._tools: dict[Any, bytes] = {}  # upstream key → OpenAI tool_calls index, encoded
        self._thinking: list[str] = []  # the current thinking block, for its signed side-field copy

    def _role(self) -> None:
        self.started = True
        self.out.append(self._prefix + b'{"role":"assistant","content":""}' + _O_TAIL)

    def _delta(self, delta: bytes) -> None:
        if not self.started:
            self._role()
        self.out.append(self._prefix + delta + _O_TAIL)

    def reasoning(self, text: str) -> None:
        self.meaningful = True
        self._thinking.append(text)
        self._delta(b'{"reasoning_content":' + dumps(text) + b"}")

    def signature(self, sig: str) -> None:
        self.meaningful = True
        block = {"type": "thinking", "thinking": "".join(self._thinking), "signature": sig}
        self._thinking.clear()
        self._delta(b'{"thinking_blocks":[' + dumps(block) + b"]}")

    def redacted(self, data: str) -> None:
        self.meaningful = True
        self._delta(b'{"thinking_blocks":[' + dumps({"type": "redacted_thinking", "data": data}) + b"]}")

    def text(self, text: str) -> None:
        self.meaningful = self.committed = True
        self._delta(b'{"content":' + dumps(text) + b"}")

    def refusal(self, text: str) -> None:
        self.meaningful = self.committed = True
        self._delta(b'{"refusal":' + dumps(text) + b"}")

    def tool_start(self, key: Any, call_id: str, name: str) -> None:
        self.meaningful = self.committed = True
        ordinal = self._tools[key] = str(len(self._tools)).encode()
        fn = b'{"name":' + dumps(name) + b',"arguments":""}'
        self._delta(
            b'{"tool_calls":[{"index":'
            + ordinal
            + b',"id":'
            + dumps(call_id)
            + b',"type":"function","function":'
            + fn
            + b"}]}"
        )

    def tool_args(self, key: Any, fragment: str) -> None:
        ordinal = self._tools.get(key)
        if ordinal is not None and fragment:
            self._delta(
                b'{"tool_calls":[{"index":'
                + ordinal
                + b',"function":{"arguments":'
                + dumps(fragment)
                + b"}}]}"
            )

    def ping(self) -> None:
        if self.started:
            self.out.append(b": ping\n\n")

    def new_attempt(self) -> None:
        self._thinking.clear()  # a failed attempt's unsigned thinking must not join the next signature

    def finish(self, end: StreamEnd) -> None:
        if not self.started:
            self._role()
        last: dict[str, Any] = {
            "id": self.chunk_id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": end.openai_reason()}],
        }
        chunks = [last]
        if self.include_usage:
            usage = usage_to_openai(end.usage_or_estimate(self.input_tokens))
            chunks.append(
                {**{k: last[k] for k in ("id", "object", "created", "model")}, "choices": [], "usage": usage}
            )
        if end.meta is not None:
            chunks[-1]["modelpool"] = end.meta
        self.out.extend(b"data: " + dumps(c) + b"\n\n" for c in chunks)
        self.out.append(b"data: [DONE]\n\n")

    def error(self, message: str, type: str) -> bytes:
        obj = {"error": {"message": message, "type": type, "param": None, "code": None}}
        return self.take() + b"data: " + dumps(obj) + b"\n\n"
