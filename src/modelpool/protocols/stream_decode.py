"""Upstream stream decoders: OpenAI-compatible chunks / Anthropic events → encoder operations.

A decoder lives for one upstream attempt (a new attempt gets a new decoder); the encoder it drives
lives for the whole client call. Decoders record how the stream ended in the shared `StreamEnd` and
raise `UpstreamStreamError` for an in-stream error or a malformed event, so the walk can classify it
(before commit: retry/switch; after: `StreamTranslator.error`).
"""

from __future__ import annotations

from typing import Any

import orjson

from modelpool.protocols.mapping import new_id, usage_from_anthropic, usage_from_openai
from modelpool.protocols.sse import SSEEvent
from modelpool.protocols.stream_encode import Encoder, StreamEnd

loads = orjson.loads


class UpstreamStreamError(Exception):
    """An upstream stream said it failed (error event / error chunk) or could not be read."""

    def __init__(self, message: str, type: str = "api_error", status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.type = type
        self.status = status


def _error_of(err: Any) -> UpstreamStreamError:
    if isinstance(err, dict):
        message, kind, code = err.get("message"), err.get("type"), err.get("code")
        return UpstreamStreamError(
            message if isinstance(message, str) else orjson.dumps(err).decode(),
            kind if isinstance(kind, str) else "api_error",
            code if isinstance(code, int) else None,
        )
    return UpstreamStreamError(str(err))


def _json(data: bytes) -> Any:
    try:
        return loads(data)
    except orjson.JSONDecodeError:
        raise UpstreamStreamError("malformed event from upstream (not JSON)") from None


class OpenAIDecoder:
    """chat.completion.chunk stream (streaming.md §4.1), DeepSeek/vLLM `reasoning_content` and
    OpenRouter-style `reasoning` included. Only choice 0 is translated (n > 1 has no Anthropic form)."""

    __slots__ = ("_calls", "_current", "done", "enc", "end", "extra")

    def __init__(self, enc: Encoder, end: StreamEnd) -> None:
        self.enc = enc
        self.end = end
        self.done = False  # [DONE] seen
        self.extra: dict[str, Any] = {}  # provider metadata found on final chunks (routing records)
        # tool_calls index → [started, id, name, buffered args]; a call starts once its name is known
        self._calls: dict[Any, list[Any]] = {}
        self._current: dict[Any, Any] = {}  # tool_calls index → key of the call it currently continues

    def feed(self, ev: SSEEvent) -> None:
        data = ev.data
        if data == b"[DONE]":
            self._flush_calls()
            self.done = True
            return
        if not data:
            return
        obj = _json(data)
        if not isinstance(obj, dict):
            raise UpstreamStreamError("malformed chunk from upstream: not a JSON object")
        if obj.get("error"):
            raise _error_of(obj["error"])
        usage = obj.get("usage")
        if usage:
            self.end.usage = usage_from_openai(usage)
        choices = obj.get("choices")
        if not choices:
            return
        choice = choices[0]
        delta = choice.get("delta") or choice.get("message")
        if delta:
            self._delta(delta)
        reason = choice.get("finish_reason")
        if reason and isinstance(reason, str):
            self._flush_calls()
            self.end.finish_reason = reason
            for key in ("provider_metadata", "providerMetadata", "provider"):
                if key in obj:
                    self.extra[key] = obj[key]

    def _delta(self, delta: dict[str, Any]) -> None:
        enc = self.enc
        # Order inside one chunk: thinking → text → tool calls (a fake-streaming provider may send all).
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if reasoning and isinstance(reasoning, str):
            self.end.chars += len(reasoning)
            enc.reasoning(reasoning)
        blocks = delta.get("thinking_blocks")
        if blocks:
            for b in blocks:
                if isinstance(b, dict) and b.get("type") == "thinking" and b.get("signature"):
                    enc.signature(b["signature"])
                elif isinstance(b, dict) and b.get("type") == "redacted_thinking" and b.get("data"):
                    enc.redacted(b["data"])
        content = delta.get("content")
        if content:
            if isinstance(content, list):  # content parts (Mistral-style); text parts only
                content = "".join(p.get("text") or "" for p in content if isinstance(p, dict))
            self.end.chars += len(content)
            if content:
                enc.text(content)
        if "annotations" in delta or "audio" in delta:  # url citations / audio: no equivalent elsewhere
            self._dropped(delta)
        refusal = delta.get("refusal")
        if refusal:
            self.end.chars += len(refusal)
            enc.refusal(refusal)
        calls = delta.get("tool_calls")
        if calls:
            for tc in calls:
                self._call(tc.get("index", 0), tc.get("id"), tc.get("function") or {})
        fc = delta.get("function_call")  # deprecated single-call form
        if isinstance(fc, dict):
            self._call("function_call", None, fc)

    def _dropped(self, delta: dict[str, Any]) -> None:
        for key in ("annotations", "audio"):
            if delta.get(key) and key not in self.end.dropped:
                self.end.dropped.append(key)

    def _call(self, index: Any, call_id: Any, fn: dict[str, Any]) -> None:
        key = self._current.get(index, index)
        state = self._calls.get(key)
        if state is not None and call_id and state[1] and call_id != state[1]:
            # A new id on a used index: providers that omit or reuse `index` for parallel calls.
            key = self._current[index] = (index, call_id)
            state = None
        if state is None:
            state = self._calls[key] = [False, None, None, []]
        if call_id and not state[1]:
            state[1] = call_id
        if fn.get("name") and not state[2]:
            state[2] = fn["name"]
        args = fn.get("arguments")
        if args:
            self.end.chars += len(args)
        if state[0]:
            if args:
                self.enc.tool_args(key, args)
            return
        if args:
            state[3].append(args)
        if state[2]:
            self._start_call(key, state)

    def _start_call(self, key: Any, state: list[Any]) -> None:
        state[0] = True
        self.enc.tool_start(key, state[1] or new_id("call_"), state[2] or "")
        if state[3]:
            self.enc.tool_args(key, "".join(state[3]))
            state[3] = []

    def _flush_calls(self) -> None:
        """Calls whose name never came still reach the client (with an empty name) rather than vanish."""
        for key, state in self._calls.items():
            if not state[0] and (state[1] or state[3]):
                self._start_call(key, state)


class AnthropicDecoder:
    """Messages event stream (streaming.md §4.2). Server-tool and result blocks and citations have no
    equivalent in the other dialects: they are skipped with their deltas and named in `end.dropped`."""

    __slots__ = ("_kinds", "done", "enc", "end", "extra")

    def __init__(self, enc: Encoder, end: StreamEnd) -> None:
        self.enc = enc
        self.end = end
        self.done = False  # message_stop seen
        self.extra: dict[str, Any] = {}
        self._kinds: dict[int, str] = {}  # block index → block type

    def feed(self, ev: SSEEvent) -> None:
        if not ev.data or ev.data == b"[DONE]":  # some Anthropic-compatible proxies add one
            return
        obj = _json(ev.data)
        if not isinstance(obj, dict):
            raise UpstreamStreamError("malformed event from upstream: not a JSON object")
        kind = obj.get("type") or ev.event
        enc = self.enc
        if kind == "content_block_delta":
            delta = obj.get("delta") or {}
            dt = delta.get("type")
            if dt == "text_delta":
                if delta.get("text"):
                    self.end.chars += len(delta["text"])
                    enc.text(delta["text"])
            elif dt == "thinking_delta":
                if delta.get("thinking"):
                    self.end.chars += len(delta["thinking"])
                    enc.reasoning(delta["thinking"])
            elif dt == "input_json_delta":
                if delta.get("partial_json") and self._kinds.get(obj.get("index", -1)) == "tool_use":
                    self.end.chars += len(delta["partial_json"])
                    enc.tool_args(obj.get("index"), delta["partial_json"])
            elif dt == "signature_delta" and delta.get("signature"):
                enc.signature(delta["signature"])
            elif dt == "citations_delta":
                self._drop("citations")
        elif kind == "content_block_start":
            self._block_start(obj.get("index", -1), obj.get("content_block") or {})
        elif kind == "message_delta":
            d = obj.get("delta") or {}
            if d.get("stop_reason") and isinstance(d["stop_reason"], str):
                self.end.stop_reason = d["stop_reason"]
                seq = d.get("stop_sequence")
                self.end.stop_sequence = seq if isinstance(seq, str) else None
            self.end.usage = usage_from_anthropic(obj.get("usage"), self.end.usage)
        elif kind == "message_start":
            message = obj.get("message") or {}
            self.end.usage = usage_from_anthropic(message.get("usage"), None)
            if self.end.usage and not enc.started:
                enc.input_tokens = self.end.usage["prompt_tokens"] - self.end.usage["cached_tokens"]
                enc.input_tokens -= self.end.usage["cache_creation_tokens"]
        elif kind == "message_stop":
            self.done = True
        elif kind == "ping":
            enc.ping()
        elif kind == "error":
            raise _error_of(obj.get("error") or {"message": "upstream error event"})
        # content_block_stop and unknown event types: nothing to do (the encoder closes blocks itself).

    def _block_start(self, index: int, block: dict[str, Any]) -> None:
        kind = block.get("type")
        self._kinds[index] = kind if isinstance(kind, str) else ""
        enc = self.enc
        if kind == "text":
            if block.get("text"):
                enc.text(block["text"])
        elif kind == "thinking":
            if block.get("thinking"):
                enc.reasoning(block["thinking"])
            if block.get("signature"):
                enc.signature(block["signature"])
        elif kind == "redacted_thinking":
            enc.redacted(block.get("data") or "")
        elif kind == "tool_use":
            enc.tool_start(index, block.get("id") or new_id("toolu_"), block.get("name") or "")
            if block.get("input"):  # a complete input at start (non-incremental providers)
                enc.tool_args(index, orjson.dumps(block["input"]).decode())
        else:
            self._drop(str(kind))
        if block.get("citations"):
            self._drop("citations")

    def _drop(self, name: str) -> None:
        if name not in self.end.dropped:
            self.end.dropped.append(name)
