"""Client-side stream encoder for OpenAI Responses: neutral stream operations → Responses events.

Event model (what the `openai` SDK's `ResponseStreamState` accumulates):
response.created → response.in_progress → per output item: response.output_item.added →
(message: content_part.added → output_text.delta* → output_text.done → content_part.done |
 reasoning: content_part.added(reasoning_text) → reasoning_text.delta* → reasoning_text.done →
 content_part.done | function_call: function_call_arguments.delta* → function_call_arguments.done)
→ response.output_item.done, then response.completed (or response.incomplete for length/content filter).
A post-commit failure is `error` followed by `response.failed`.

Reasoning goes out as `reasoning_text` (raw chain of thought is what upstreams send); an Anthropic
thinking signature becomes the reasoning item's `encrypted_content` under modelpool's marker
(`translate_reasoning`), which a Responses client sends back with the item and `translate_responses`
reads as the signature.

A route's call of a function that stands for a Responses `custom` or `local_shell` tool
(`translate_tools`) becomes a `custom_tool_call` / `local_shell_call` item. Its arguments are buffered:
the route streams them JSON-escaped, while the client wants the raw input, so the input goes out as one
`response.custom_tool_call_input.delta` then `.done` when the call ends (a local shell call has no delta
events: added → done with its action).
"""

from __future__ import annotations

from typing import Any

import orjson

from modelpool.protocols.mapping import new_id, now, usage_to_responses
from modelpool.protocols.responses import INCOMPLETE_BY_FINISH, frame, response_object
from modelpool.protocols.stream_encode import Encoder, StreamEnd
from modelpool.protocols.translate_deferred import namespaced
from modelpool.protocols.translate_reasoning import seal_redacted, seal_signature
from modelpool.protocols.translate_tools import client_item, special_tools

dumps = orjson.dumps

_TEXT_DELTA = b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","item_id":'
_REASON_DELTA = (
    b'event: response.reasoning_text.delta\ndata: {"type":"response.reasoning_text.delta","item_id":'
)
_ARGS_DELTA = (
    b"event: response.function_call_arguments.delta\n"
    b'data: {"type":"response.function_call_arguments.delta","item_id":'
)
_REFUSAL_DELTA = b'event: response.refusal.delta\ndata: {"type":"response.refusal.delta","item_id":'


_SPECIAL_KIND = {
    "custom_tool_call": "custom",
    "local_shell_call": "local_shell",
    "tool_search_call": "tool_search",
}


class ResponsesEncoder(Encoder):
    def __init__(
        self, model: str, request: dict[str, Any] | None = None, response_id: str | None = None
    ) -> None:
        super().__init__(model)
        self.request = request or {}
        self.response_id = response_id or new_id("resp_")
        self.created_at = now()
        self._seq = 0
        self.output: list[dict[str, Any]] = []  # finished items, for the final response object
        self._item: dict[str, Any] | None = None  # the open item
        self._acc: list[str] = []  # text of the open item's part (or arguments of a call)
        self._ids = b""  # '"<item_id>","output_index":N' encoded for the delta fast path
        self._key: Any = None
        self._break = False
        self._special = special_tools(self.request)  # function name → custom | local_shell | …
        self._namespaced = namespaced(self.request) if "namespace" in self._special.values() else {}

    # -- framing

    def _emit(self, kind: str, obj: dict[str, Any]) -> None:
        obj["type"] = kind
        obj["sequence_number"] = self._seq
        self._seq += 1
        self.out.append(frame(kind.encode(), obj))

    def _delta(self, head: bytes, text: str, tail: bytes = b"") -> None:
        self._acc.append(text)
        seq = str(self._seq).encode()
        self._seq += 1
        self.out.append(
            head + self._ids + tail + b',"delta":' + dumps(text) + b',"sequence_number":' + seq + b"}\n\n"
        )

    def _response(self, status: str, **kw: Any) -> dict[str, Any]:
        return response_object(
            resp_id=self.response_id,
            created_at=self.created_at,
            model=self.model,
            output=list(self.output),
            status=status,
            request=self.request,
            **kw,
        )

    def _start(self) -> None:
        self.started = True
        self._emit("response.created", {"response": self._response("in_progress")})
        self._emit("response.in_progress", {"response": self._response("in_progress")})

    # -- items

    def _open(self, kind: str, item: dict[str, Any], part: dict[str, Any] | None) -> None:
        if not self.started:
            self._start()
        self._close()
        index = len(self.output)
        self._item, self._acc, self._break = item, [], False
        self._ids = dumps(item["id"]) + b',"output_index":' + str(index).encode()
        self._emit("response.output_item.added", {"output_index": index, "item": dict(item)})
        if part is not None:
            where = {"item_id": item["id"], "output_index": index, "content_index": 0}
            self._emit("response.content_part.added", {**where, "part": part})

    def _close(self) -> None:
        item = self._item
        if item is None:
            return
        self._item = None
        index = len(self.output)
        text = "".join(self._acc)
        where = {"item_id": item["id"], "output_index": index}
        kind = item["type"]
        if kind == "message":
            part = item.pop("_part")
            if part["type"] == "output_text":
                self._emit(
                    "response.output_text.done", {**where, "content_index": 0, "text": text, "logprobs": []}
                )
                done_part: dict[str, Any] = {
                    "type": "output_text",
                    "text": text,
                    "annotations": [],
                    "logprobs": [],
                }
            else:
                self._emit("response.refusal.done", {**where, "content_index": 0, "refusal": text})
                done_part = {"type": "refusal", "refusal": text}
            self._emit("response.content_part.done", {**where, "content_index": 0, "part": done_part})
            item["content"] = [done_part]
        elif kind == "reasoning":
            self._emit("response.reasoning_text.done", {**where, "content_index": 0, "text": text})
            part = {"type": "reasoning_text", "text": text}
            self._emit("response.content_part.done", {**where, "content_index": 0, "part": part})
            item["content"] = [part]
        elif kind == "function_call":
            done = {**where, "name": item["name"], "arguments": text}
            self._emit("response.function_call_arguments.done", done)
            item["arguments"] = text
        else:
            item = self._close_special(item, text, where)
        item["status"] = "completed"
        self.output.append(item)
        self._emit("response.output_item.done", {"output_index": index, "item": item})

    def _close_special(self, item: dict[str, Any], arguments: str, where: dict[str, Any]) -> dict[str, Any]:
        """The custom_tool_call / local_shell_call / tool_search_call item of a finished function call."""
        kind = _SPECIAL_KIND[item["type"]]
        done = client_item(kind, item["id"], item["call_id"], item.get("name", ""), arguments)
        if kind == "custom":
            raw = done["input"]
            self._emit("response.custom_tool_call_input.delta", {**where, "delta": raw})
            self._emit("response.custom_tool_call_input.done", {**where, "input": raw})
        return done

    def _message(self, part_type: str) -> None:
        if (
            self._item is not None
            and self._item.get("_part", {}).get("type") == part_type
            and not self._break
        ):
            return
        item: dict[str, Any] = {
            "id": new_id("msg_"),
            "type": "message",
            "role": "assistant",
            "status": "in_progress",
            "content": [],
        }
        part: dict[str, Any] = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        if part_type == "refusal":
            part = {"type": "refusal", "refusal": ""}
        self._open("message", item, part)
        item["_part"] = part

    # -- operations

    def _reasoning_item(self, fresh: bool = False) -> dict[str, Any]:
        """The open reasoning item; a new one after a signature (one signed block per item), on a new
        attempt, or when asked."""
        item = self._item
        if fresh or item is None or item["type"] != "reasoning" or self._break or "encrypted_content" in item:
            item = {"id": new_id("rs_"), "type": "reasoning", "summary": [], "status": "in_progress"}
            self._open("reasoning", item, {"type": "reasoning_text", "text": ""})
        self.meaningful = True
        return item

    def reasoning(self, text: str) -> None:
        self._reasoning_item()
        self._delta(_REASON_DELTA, text, b',"content_index":0')

    def signature(self, sig: str) -> None:
        item = self._item
        if item is None or item["type"] != "reasoning" or self._break or "encrypted_content" in item:
            item = self._reasoning_item(fresh=True)
        item["encrypted_content"] = seal_signature(sig)

    def redacted(self, data: str) -> None:
        # Opaque either way: the client passes encrypted_content back with the item.
        self._reasoning_item(fresh=True)["encrypted_content"] = seal_redacted(data)

    def text(self, text: str) -> None:
        self._message("output_text")
        self.meaningful = self.committed = True
        self._delta(_TEXT_DELTA, text, b',"content_index":0,"logprobs":[]')

    def refusal(self, text: str) -> None:
        self._message("refusal")
        self.meaningful = self.committed = True
        self._delta(_REFUSAL_DELTA, text, b',"content_index":0')

    def tool_start(self, key: Any, call_id: str, name: str) -> None:
        special = self._special.get(name) if self._special else None
        item: dict[str, Any]
        if special == "custom":
            item = {"id": new_id("ctc_"), "type": "custom_tool_call", "call_id": call_id, "name": name}
            item |= {"input": "", "status": "in_progress"}
        elif special == "tool_search":
            item = {"id": new_id("tsc_"), "type": "tool_search_call", "call_id": call_id}
            item |= {"execution": "client", "arguments": {}, "status": "in_progress"}
        elif special == "namespace":
            namespace, child = self._namespaced.get(name, ("", name))
            item = {"id": new_id("fc_"), "type": "function_call", "call_id": call_id, "name": child}
            item |= {"namespace": namespace, "arguments": "", "status": "in_progress"}
        elif special is not None:
            action = {"type": "exec", "command": [], "env": {}}
            item = {"id": new_id("lsh_"), "type": "local_shell_call", "call_id": call_id, "action": action}
            item["status"] = "in_progress"
        else:
            item = {
                "id": new_id("fc_"),
                "type": "function_call",
                "call_id": call_id,
                "name": name,
                "arguments": "",
                "status": "in_progress",
            }
        self._open(item["type"], item, None)
        self._key = key
        self.meaningful = self.committed = True

    def tool_args(self, key: Any, fragment: str) -> None:
        item = self._item
        if item is None or self._key != key or not fragment:
            return
        if item["type"] == "function_call":
            self._delta(_ARGS_DELTA, fragment)
        elif item["type"] in ("custom_tool_call", "local_shell_call", "tool_search_call"):
            self._acc.append(fragment)  # sent as the raw input when the call ends

    def ping(self) -> None:
        if self.started:
            self.out.append(b": ping\n\n")  # SSE comment: ignored by parsers, keeps proxies awake

    def new_attempt(self) -> None:
        self._break = True

    def finish(self, end: StreamEnd) -> None:
        if not self.started:
            self._start()
        self._close()
        reason = INCOMPLETE_BY_FINISH.get(end.openai_reason())
        usage = usage_to_responses(end.usage_or_estimate(self.input_tokens))
        response = self._response(
            "incomplete" if reason else "completed", usage=usage, incomplete_reason=reason
        )
        if end.meta is not None:
            response["modelpool"] = end.meta
        self._emit("response.incomplete" if reason else "response.completed", {"response": response})

    def error(self, message: str, type: str) -> bytes:
        self._emit("error", {"code": type, "message": message, "param": None})
        failed = self._response("failed", error={"code": "server_error", "message": message})
        self._emit("response.failed", {"response": failed})
        return self.take()
