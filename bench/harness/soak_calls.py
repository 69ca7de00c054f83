"""One soak call in any of the three client dialects, judged by what the client saw.

Every call ends in exactly one verdict:

- `answer`     — a complete reply (200 body, or a stream that reached its dialect's terminator);
- `error`      — a clear error: a 4xx/5xx (not 500) JSON body in the dialect's shape, or a stream that
                 carried an error event and *no* terminator (so a cut answer cannot pass for a whole one);
- `lost`       — neither: a connection dropped without an error, a stream that just stopped, a 500,
                 an unparsable body, a terminator after an error event;
- `hung`       — the client's deadline passed (a stream that never ends);
- `duplicated` — the text the client got repeats or skips a token (the sim's text is `[P:M] tok0 tok1 …`,
                 every token unique and numbered, so a replayed or spliced attempt is visible);
- `truncated`  — a reply that *looked* complete but had fewer tokens than the sim sends.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

DIALECTS = ("openai", "anthropic", "responses")
PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages", "responses": "/v1/responses"}
VERDICTS = ("answer", "error", "lost", "hung", "duplicated", "truncated")
_TEXT = re.compile(r"\[([^\]]+)\]((?: tok\d+)+)")


@dataclass(slots=True)
class Outcome:
    verdict: str
    dialect: str
    stream: bool
    status: int | None = None
    detail: str = ""
    seconds: float = 0.0


def request_body(dialect: str, model: str, stream: bool, prompt: str) -> bytes:
    body: dict[str, Any]
    if dialect == "openai":
        body = {"model": model, "messages": [{"role": "user", "content": prompt}]}
    elif dialect == "anthropic":
        body = {"model": model, "max_tokens": 1024, "messages": [{"role": "user", "content": prompt}]}
    else:
        body = {"model": model, "input": prompt}
    if stream:
        body["stream"] = True
    return orjson.dumps(body)


def text_problem(text: str, expected_tokens: int | None) -> str | None:
    """Why `text` is not an in-order prefix of one sim reply (None: it is). `expected_tokens` set:
    the reply claims to be complete, so it must carry exactly that many tokens."""
    m = _TEXT.fullmatch(text)
    if m is None:
        return f"unexpected text {text[:80]!r}"
    indices = [int(tok[3:]) for tok in m.group(2).split()]
    if indices != list(range(len(indices))):
        return f"tokens out of sequence (duplicated or spliced): {text[:120]!r}"
    if expected_tokens is not None and len(indices) != expected_tokens:
        return f"complete reply with {len(indices)} of {expected_tokens} tokens"
    return None


async def soak_call(
    session: aiohttp.ClientSession,
    base_url: str,
    dialect: str,
    model: str,
    stream: bool,
    headers: dict[str, str],
    deadline: float,
    expected_tokens: int,
) -> Outcome:
    start = time.perf_counter()
    out = Outcome("lost", dialect, stream)
    body = request_body(dialect, model, stream, "soak: say something")
    try:
        timeout = aiohttp.ClientTimeout(total=deadline)
        async with session.post(base_url + PATHS[dialect], data=body, headers=headers, timeout=timeout) as r:
            out.status = r.status
            if r.status != 200:
                _judge_error(out, r.status, await r.read())
            elif stream:
                await _judge_stream(out, r, expected_tokens)
            else:
                _judge_body(out, await r.read(), expected_tokens)
    except TimeoutError:
        out.verdict, out.detail = "hung", f"no end within {deadline:.0f}s"
    except aiohttp.ClientError as exc:
        out.verdict, out.detail = "lost", f"{type(exc).__name__}: {exc}"
    out.seconds = time.perf_counter() - start
    return out


def _judge_error(out: Outcome, status: int, raw: bytes) -> None:
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        out.verdict, out.detail = "lost", f"HTTP {status} without a JSON body: {raw[:120]!r}"
        return
    clear = isinstance(obj, dict) and isinstance(obj.get("error"), dict) and obj["error"].get("message")
    if status == 500 or not clear:  # a 500 is the gateway's own failure, never a clear answer
        out.verdict, out.detail = "lost", f"HTTP {status}: {raw[:160]!r}"
    else:
        out.verdict, out.detail = "error", f"HTTP {status} {obj['error'].get('type')}"


def _body_text(dialect: str, obj: dict[str, Any]) -> str:
    if dialect == "openai":
        return str(obj["choices"][0]["message"]["content"])
    if dialect == "anthropic":
        return "".join(b["text"] for b in obj["content"] if b.get("type") == "text")
    parts = [c for item in obj["output"] if item.get("type") == "message" for c in item["content"]]
    return "".join(c["text"] for c in parts if c.get("type") == "output_text")


def _judge_body(out: Outcome, raw: bytes, expected_tokens: int) -> None:
    try:
        text = _body_text(out.dialect, orjson.loads(raw))
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError) as exc:
        out.verdict, out.detail = "lost", f"unreadable 200 body ({exc}): {raw[:120]!r}"
        return
    out.verdict = "answer"
    _judge_text(out, text, complete=True, expected_tokens=expected_tokens)


def _judge_text(out: Outcome, text: str, complete: bool, expected_tokens: int) -> None:
    if not complete and not text:
        return  # an error before any text: nothing to check
    problem = text_problem(text, expected_tokens if complete else None)
    if problem is None:
        return
    out.detail = problem
    out.verdict = "truncated" if problem.startswith("complete reply with") else "duplicated"


async def _judge_stream(out: Outcome, resp: aiohttp.ClientResponse, expected_tokens: int) -> None:
    state = _StreamState(out.dialect)
    pending = b""
    async for chunk in resp.content.iter_any():
        pending += chunk
        while (cut := pending.find(b"\n\n")) >= 0:
            event, pending = pending[:cut], pending[cut + 2 :]
            state.feed(event)
    if state.done and state.error is None:
        out.verdict = "answer"
        _judge_text(out, state.text, complete=True, expected_tokens=expected_tokens)
    elif state.error is not None and not state.done:
        out.verdict, out.detail = "error", f"stream error event: {state.error[:120]}"
        _judge_text(out, state.text, complete=False, expected_tokens=expected_tokens)
    elif state.done:
        out.verdict, out.detail = "lost", f"terminator after an error event: {state.error}"
    else:
        out.verdict, out.detail = (
            "lost",
            f"stream ended with neither terminator nor error ({len(state.text)} chars)",
        )


class _StreamState:
    """Text, terminator and error of one SSE stream in one dialect."""

    def __init__(self, dialect: str) -> None:
        self.dialect = dialect
        self.text = ""
        self.done = False
        self.error: str | None = None

    def feed(self, event: bytes) -> None:
        name = ""
        data: list[bytes] = []
        for line in event.split(b"\n"):
            if line.startswith(b"event:"):
                name = line[6:].strip().decode()
            elif line.startswith(b"data:"):
                data.append(line[5:].strip())
        if not data:
            return
        payload = b"\n".join(data)
        if payload == b"[DONE]":
            self.done = self.dialect == "openai"
            return
        try:
            obj = orjson.loads(payload)
        except orjson.JSONDecodeError:
            self.error = self.error or f"malformed event {payload[:80]!r}"
            return
        if isinstance(obj, dict):
            self._apply(name or str(obj.get("type", "")), obj)

    def _apply(self, name: str, obj: dict[str, Any]) -> None:
        if obj.get("error") or name in ("error", "response.failed"):
            self.error = self.error or orjson.dumps(obj.get("error") or obj).decode()
            return
        if self.dialect == "openai":
            for choice in obj.get("choices") or ():
                self.text += (choice.get("delta") or {}).get("content") or ""
        elif self.dialect == "anthropic":
            delta = obj.get("delta") or {}
            if name == "content_block_delta" and delta.get("type") == "text_delta":
                self.text += delta.get("text", "")
            self.done = self.done or name == "message_stop"
        else:
            if name == "response.output_text.delta":
                self.text += obj.get("delta", "")
            self.done = self.done or name == "response.completed"
