"""The Gemini upstream decoder: `data: <GenerateContentResponse>` events → encoder operations.

For a client of another dialect on a route that speaks only the Gemini API. Thought parts are reasoning,
text parts answer text, a function call (whole in one part) a tool call with its id; the event with a
`finishReason` ends the attempt (Gemini sends no terminator). A `thoughtSignature` only Gemini can
verify has no place in the other dialects: named in `end.dropped`.
"""

from __future__ import annotations

from typing import Any

import orjson

from modelpool.protocols.gemini.wire import FINISH_TO_OPENAI, usage_from_gemini
from modelpool.protocols.mapping import new_id
from modelpool.protocols.sse import SSEEvent
from modelpool.protocols.stream_decode import UpstreamStreamError, _error_of, _json
from modelpool.protocols.stream_encode import Encoder, StreamEnd


class GeminiDecoder:
    __slots__ = ("_calls", "done", "enc", "end", "extra")

    def __init__(self, enc: Encoder, end: StreamEnd) -> None:
        self.enc = enc
        self.end = end
        self.done = False
        self.extra: dict[str, Any] = {}
        self._calls = 0

    def feed(self, ev: SSEEvent) -> None:
        if not ev.data:
            return
        obj = _json(ev.data)
        if not isinstance(obj, dict):
            raise UpstreamStreamError("malformed event from upstream: not a JSON object")
        if obj.get("error"):
            err = obj["error"]
            failure = _error_of(err)
            if isinstance(err, dict) and isinstance(err.get("code"), int):
                failure.status = err["code"]
            raise failure
        if obj.get("usageMetadata"):
            self.end.usage = usage_from_gemini(obj["usageMetadata"])
        candidates = obj.get("candidates") or ()
        if not candidates:
            return
        cand = candidates[0]
        content = cand.get("content") or {}
        for part in content.get("parts") or ():
            self._part(part)
        reason = cand.get("finishReason")
        if reason:
            self.end.finish_reason = "tool_calls" if self._calls else FINISH_TO_OPENAI.get(reason, "stop")
            self.done = True

    def _part(self, part: dict[str, Any]) -> None:
        enc = self.enc
        if part.get("thoughtSignature") and "thoughtSignature" not in self.end.dropped:
            self.end.dropped.append("thoughtSignature")
        call = part.get("functionCall")
        if isinstance(call, dict):
            args = orjson.dumps(call.get("args") or {}).decode()
            key = ("gemini", self._calls)
            self._calls += 1
            self.end.chars += len(args)
            enc.tool_start(key, call.get("id") or new_id("call_"), call.get("name") or "")
            enc.tool_args(key, args)
            return
        text = part.get("text")
        if isinstance(text, str) and text:
            self.end.chars += len(text)
            if part.get("thought"):
                enc.reasoning(text)
            else:
                enc.text(text)
        elif part.get("executableCode") or part.get("codeExecutionResult"):
            name = "executableCode" if part.get("executableCode") else "codeExecutionResult"
            if name not in self.end.dropped:
                self.end.dropped.append(name)
