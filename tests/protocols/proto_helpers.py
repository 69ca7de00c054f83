"""Test helpers: read a stream in any dialect back into comparable facts, and run the official SDKs'
stream parsers over bytes we produced (through an in-memory HTTP transport)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import orjson

from modelpool.protocols.sse import SSEEvent, SSEParser
from modelpool.protocols.translate_stream import StreamTranslator, UpstreamStreamError

CORPUS = Path(__file__).parent / "corpus"

# Stop reasons compared in one vocabulary (OpenAI's).
_TO_OPENAI = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls"}
_TO_OPENAI |= {"refusal": "content_filter", "completed": "stop", "max_output_tokens": "length"}


def load(name: str) -> bytes:
    return (CORPUS / name).read_bytes()


def events_of(data: bytes, seed: int | None = None) -> list[SSEEvent]:
    """Parse `data`, split into random reads when `seed` is given (mid-event, mid-UTF-8)."""
    parser = SSEParser()
    if seed is None:
        return parser.feed(data) + parser.close()
    rnd = random.Random(seed)
    out: list[SSEEvent] = []
    i = 0
    while i < len(data):
        n = rnd.randint(1, 40)
        out += parser.feed(data[i : i + n])
        i += n
    return out + parser.close()


@dataclass
class Facts:
    text: str = ""
    reasoning: str = ""
    tools: list[tuple[str, str, Any]] = field(default_factory=list)  # (id, name, parsed arguments)
    signatures: list[str] = field(default_factory=list)
    stop: str | None = None
    usage: dict[str, int] | None = None  # prompt/completion/cached
    error: str | None = None
    terminated: bool = False  # success terminator seen

    def content(self) -> tuple[Any, ...]:
        return (self.text, self.reasoning, self.tools, self.signatures)


def _args(s: str) -> Any:
    try:
        return orjson.loads(s) if s else {}
    except orjson.JSONDecodeError:
        return ("invalid", s)


def facts_from_openai(data: bytes) -> Facts:
    f = Facts()
    calls: dict[int, list[str]] = {}
    for ev in events_of(data):
        if ev.is_done:
            f.terminated = True
            continue
        obj = orjson.loads(ev.data)
        if "error" in obj:
            f.error = obj["error"]["message"]
            continue
        if obj.get("usage"):
            u = obj["usage"]
            cached = (u.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
            f.usage = {"prompt": u["prompt_tokens"], "completion": u["completion_tokens"], "cached": cached}
        for choice in obj.get("choices") or []:
            d = choice.get("delta") or {}
            f.text += d.get("content") or ""
            f.reasoning += d.get("reasoning_content") or ""
            for b in d.get("thinking_blocks") or []:
                if b.get("signature"):
                    f.signatures.append(b["signature"])
            for tc in d.get("tool_calls") or []:
                c = calls.setdefault(tc["index"], ["", "", ""])
                c[0] = tc.get("id") or c[0]
                fn = tc.get("function") or {}
                c[1] = fn.get("name") or c[1]
                c[2] += fn.get("arguments") or ""
            if choice.get("finish_reason"):
                f.stop = choice["finish_reason"]
    f.tools = [(c[0], c[1], _args(c[2])) for _, c in sorted(calls.items())]
    return f


def facts_from_anthropic(data: bytes) -> Facts:
    f = Facts()
    blocks: dict[int, dict[str, Any]] = {}
    usage: dict[str, Any] = {}
    for ev in events_of(data):
        obj = orjson.loads(ev.data)
        kind = obj["type"]
        assert ev.event == kind, (ev.event, kind)
        if kind == "message_start":
            usage.update(obj["message"]["usage"])
        elif kind == "content_block_start":
            blocks[obj["index"]] = dict(obj["content_block"], _args="")
        elif kind == "content_block_delta":
            b, d = blocks[obj["index"]], obj["delta"]
            if d["type"] == "text_delta":
                f.text += d["text"]
            elif d["type"] == "thinking_delta":
                f.reasoning += d["thinking"]
            elif d["type"] == "signature_delta":
                f.signatures.append(d["signature"])
            elif d["type"] == "input_json_delta":
                b["_args"] += d["partial_json"]
        elif kind == "message_delta":
            f.stop = _TO_OPENAI.get(obj["delta"]["stop_reason"], obj["delta"]["stop_reason"])
            usage.update({k: v for k, v in obj["usage"].items() if v is not None})
        elif kind == "message_stop":
            f.terminated = True
        elif kind == "error":
            f.error = obj["error"]["message"]
    f.tools = [
        (b["id"], b["name"], _args(b["_args"])) for _, b in sorted(blocks.items()) if b["type"] == "tool_use"
    ]
    if f.stop is not None:
        cached = usage.get("cache_read_input_tokens") or 0
        prompt = usage.get("input_tokens", 0) + cached + (usage.get("cache_creation_input_tokens") or 0)
        f.usage = {"prompt": prompt, "completion": usage.get("output_tokens", 0), "cached": cached}
    return f


def facts_from_responses(data: bytes) -> Facts:
    f = Facts()
    seqs = []
    for ev in events_of(data):
        obj = orjson.loads(ev.data)
        assert ev.event == obj["type"]
        seqs.append(obj["sequence_number"])
        kind = obj["type"]
        if kind == "response.output_text.delta":
            f.text += obj["delta"]
        elif kind == "response.reasoning_text.delta":
            f.reasoning += obj["delta"]
        elif kind == "response.output_item.done":
            item = obj["item"]
            if item["type"] == "function_call":
                f.tools.append((item["call_id"], item["name"], _args(item["arguments"])))
            elif item["type"] == "reasoning" and item.get("encrypted_content"):
                # modelpool marks the signatures it hands a Responses client (translate_reasoning)
                f.signatures.append(item["encrypted_content"].removeprefix("mp1.sig."))
        elif kind in ("response.completed", "response.incomplete"):
            f.terminated = True
            r = obj["response"]
            reason = (r.get("incomplete_details") or {}).get("reason")
            tools = any(i["type"] == "function_call" for i in r["output"])
            f.stop = _TO_OPENAI.get(reason or "completed") if not tools else "tool_calls"
            if r.get("usage"):
                u = r["usage"]
                f.usage = {
                    "prompt": u["input_tokens"],
                    "completion": u["output_tokens"],
                    "cached": u["input_tokens_details"]["cached_tokens"],
                }
        elif kind == "error":
            f.error = obj["message"]
    assert seqs == list(range(len(seqs))), "sequence numbers must count from 0 without gaps"
    return f


FACTS = {"openai": facts_from_openai, "anthropic": facts_from_anthropic, "responses": facts_from_responses}


def translate(
    data: bytes,
    upstream: str,
    client: str,
    seed: int | None = None,
    meta: dict[str, Any] | None = None,
    **kw: Any,
) -> tuple[bytes, StreamTranslator]:
    """Run a whole upstream stream through a translator as a relay would."""
    kw.setdefault("model", "pool-x")
    t = StreamTranslator(client, upstream, **kw)
    out = b""
    try:
        for ev in events_of(data, seed):
            out += t.feed(ev)
            if t.upstream_done:
                break
    except UpstreamStreamError as exc:
        return out + t.error(exc.message, exc.type), t
    if meta is not None:
        t.set_metadata(meta)
    return out + t.finish(), t


# ---------------------------------------------------------------- official SDK parsers


def _http(data: bytes) -> httpx2.Client:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=data)

    return httpx2.Client(transport=httpx2.MockTransport(handler))


def sdk_openai_chunks(data: bytes) -> list[Any]:
    client = openai.OpenAI(api_key="k", base_url="http://test/v1", http_client=_http(data), max_retries=0)
    stream = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "x"}], stream=True
    )
    return list(stream)


def sdk_anthropic_message(data: bytes) -> Any:
    client = anthropic.Anthropic(api_key="k", base_url="http://test", http_client=_http(data), max_retries=0)
    with client.messages.stream(model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}]) as s:
        for _ in s:
            pass
        return s.get_final_message()


def sdk_responses_final(data: bytes) -> Any:
    client = openai.OpenAI(api_key="k", base_url="http://test/v1", http_client=_http(data), max_retries=0)
    with client.responses.stream(model="m", input="x") as s:
        for _ in s:
            pass
        return s.get_final_response()
