"""The Gemini stream encoder: dialect-neutral stream operations → `data: <GenerateContentResponse>` events.

Each reasoning or text delta is one event with one part (`{"text": …, "thought": true}` for reasoning);
a function call goes out whole, as Gemini sends it (`{"functionCall": {id, name, args}}`), once its
arguments are complete (the next operation or the end). The last event carries `finishReason`,
`usageMetadata` and the `modelpool` metadata. Gemini CLI treats a stream without a function call whose
answer text is empty as broken and retries it; a translated stream therefore always carries a
finishReason, text is never dropped on the way, and an upstream that answered with reasoning only (or
nothing) gets its final event's text from `empty_answer_text`, saying so.

Signatures of another provider's reasoning cannot be verified by anything a Gemini client sends back to
(a translated turn drops `thoughtSignature` anyway): they are not written.
"""

from __future__ import annotations

from typing import Any

import orjson

from modelpool.protocols.gemini.reply import empty_answer_text, finish_reason
from modelpool.protocols.gemini.wire import stream_error_event, usage_to_gemini
from modelpool.protocols.mapping import new_id, parse_arguments
from modelpool.protocols.stream_encode import Encoder, StreamEnd

dumps = orjson.dumps
_HEAD = b'data: {"candidates":[{"content":{"role":"model","parts":['
_THOUGHT_TAIL = b',"thought":true}]},"index":0}]'


class GeminiEncoder(Encoder):
    def __init__(self, model: str) -> None:
        super().__init__(model)
        self.response_id = new_id("")
        self._tail = (
            b',"modelVersion":' + dumps(model) + b',"responseId":' + dumps(self.response_id) + b"}\n\n"
        )
        self._call: list[Any] | None = None  # [id, name, fragments] of the call being received
        self.calls = 0
        self.answered = False  # non-blank answer text went out (what Gemini CLI checks, trimmed)
        self.thoughts = False

    def _part(self, part: bytes) -> None:
        self.started = True
        self.out.append(_HEAD + part + b']},"index":0}]' + self._tail)

    def _flush_call(self) -> None:
        call = self._call
        if call is None:
            return
        self._call = None
        body = {"id": call[0], "name": call[1], "args": parse_arguments("".join(call[2]))}
        self.calls += 1
        self._part(b'{"functionCall":' + dumps(body) + b"}")

    def reasoning(self, text: str) -> None:
        self._flush_call()
        self.meaningful = self.thoughts = True
        self.started = True
        self.out.append(_HEAD + b'{"text":' + dumps(text) + _THOUGHT_TAIL + self._tail)

    def text(self, text: str) -> None:
        self._flush_call()
        self.meaningful = self.committed = True
        if not self.answered and text.strip():
            self.answered = True
        self._part(b'{"text":' + dumps(text) + b"}")

    refusal = text

    def tool_start(self, key: Any, call_id: str, name: str) -> None:
        self._flush_call()
        self.meaningful = self.committed = True
        self._call = [call_id, name, []]

    def tool_args(self, key: Any, fragment: str) -> None:
        if self._call is not None:
            self._call[2].append(fragment)

    def new_attempt(self) -> None:
        self._call = None  # only before the commit point: nothing of a call was sent

    def finish(self, end: StreamEnd) -> None:
        self._flush_call()
        reason = finish_reason(end.finish_reason, end.stop_reason)
        usage = end.usage_or_estimate(self.input_tokens)
        text = ""
        if not (self.answered or self.calls):
            text = empty_answer_text(reason, self.thoughts or bool(usage["reasoning_tokens"]))
        candidate: dict[str, Any] = {
            "content": {"role": "model", "parts": [{"text": text}]},
            "finishReason": reason,
            "index": 0,
        }
        obj: dict[str, Any] = {
            "candidates": [candidate],
            "usageMetadata": usage_to_gemini(usage),
            "modelVersion": self.model,
            "responseId": self.response_id,
        }
        if end.meta is not None:
            obj["modelpool"] = end.meta
        self.started = True
        self.out.append(b"data: " + dumps(obj) + b"\n\n")

    def error(self, message: str, type: str) -> bytes:
        self.out.append(stream_error_event(message, type))
        return self.take()
