"""One call through the gateway in each ingress dialect, with the official SDKs, reduced to what the client
saw: the answer text, whether the reply ended as a success, the error it raised or carried, the modelpool
headers and metadata, and the raw bytes on the wire (a tee under the SDKs' HTTP client — both official SDKs
run on `httpx2`), so a test can check that no success terminator followed an error."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import anthropic
import httpx2
import openai

from gateway_server import GatewayServer

DIALECTS = ("chat", "messages", "responses")
MODES = ("once", "stream")
PROMPT = "hello"
# Above every scripted reply (the sim truncates at max_tokens). Set in every dialect: without it an OpenAI
# request carried to an Anthropic route gets the translation's default of 4096 (reported as a `length` stop).
MAX_TOKENS = 32000
SDK_TIMEOUT = 30.0  # a non-default timeout also stops the anthropic SDK refusing a large non-stream call

# The success terminator of a stream in each dialect, as bytes on the wire.
TERMINATORS = {
    "chat": b"data: [DONE]",
    "messages": b"event: message_stop",
    "responses": b"event: response.completed",
}


class _TeeStream(httpx2.SyncByteStream):
    def __init__(self, inner: httpx2.SyncByteStream, sink: bytearray) -> None:
        self._inner = inner
        self._sink = sink
        self._it: Iterator[bytes] | None = None

    def __iter__(self) -> Iterator[bytes]:
        self._it = iter(self._inner)
        for chunk in self._it:
            self._sink.extend(chunk)
            yield chunk

    def close(self) -> None:
        # An SDK stops reading at an error event: read on to the end, so a success terminator sent after
        # the error would still be seen.
        if self._it is not None:
            try:
                for chunk in self._it:
                    self._sink.extend(chunk)
            except httpx2.HTTPError:
                pass
        self._inner.close()


class TeeTransport(httpx2.HTTPTransport):
    """Keeps a copy of every response body byte the SDK reads."""

    def __init__(self) -> None:
        super().__init__()
        self.raw = bytearray()

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        resp = super().handle_request(request)
        assert isinstance(resp.stream, httpx2.SyncByteStream)
        resp.stream = _TeeStream(resp.stream, self.raw)
        return resp


@dataclass
class Seen:
    """What the client saw of one call."""

    dialect: str
    stream: bool
    text: str = ""
    completed: bool = False  # a whole reply: a body, or a stream that reached its success terminator
    status: int | None = None  # HTTP status of the response
    error: str | None = None  # the error the SDK raised, or an error event the stream carried
    error_body: Any = None  # the error object of an HTTP error reply
    headers: dict[str, str] = field(default_factory=dict)
    meta: dict[str, Any] | None = None  # the `modelpool` field of the final chunk/event or body
    raw: bytes = b""
    elapsed: float = 0.0

    @property
    def route(self) -> str | None:
        """The route that answered: the stream's final metadata knows of late switches, else the header."""
        if self.meta and self.meta.get("route"):
            return str(self.meta["route"])
        return self.headers.get("x-modelpool-route")

    @property
    def attempts(self) -> int | None:
        value = self.headers.get("x-modelpool-attempts")
        return int(value) if value is not None else None

    @property
    def terminated(self) -> bool:
        """The success terminator is on the wire."""
        return TERMINATORS[self.dialect] in self.raw


@dataclass
class _Clients:
    """The SDK clients of one gateway, kept across calls (calls are sequential: the tee is reset per call)."""

    tee: TeeTransport
    openai: openai.OpenAI
    anthropic: anthropic.Anthropic


_CLIENTS: dict[str, _Clients] = {}


def _clients(gw: GatewayServer) -> _Clients:
    found = _CLIENTS.get(gw.url)
    if found is None:
        tee = TeeTransport()
        http = httpx2.Client(transport=tee, timeout=SDK_TIMEOUT)
        found = _CLIENTS[gw.url] = _Clients(
            tee,
            openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0, http_client=http),
            anthropic.Anthropic(base_url=gw.url, api_key="x", max_retries=0, http_client=http),
        )
    return found


def call(gw: GatewayServer, dialect: str, stream: bool, model: str, session: str) -> Seen:
    seen = Seen(dialect, stream)
    clients = _clients(gw)
    clients.tee.raw.clear()
    headers = {"x-session-id": session}
    t0 = time.monotonic()
    try:
        if dialect == "messages":
            _messages(clients, seen, stream, model, headers)
        else:
            _openai(clients, seen, dialect, stream, model, headers)
    finally:
        seen.elapsed = time.monotonic() - t0
        seen.raw = bytes(clients.tee.raw)
    return seen


def _status_error(seen: Seen, exc: openai.APIStatusError | anthropic.APIStatusError) -> None:
    seen.status = exc.status_code
    seen.error = str(exc)
    seen.error_body = exc.body
    seen.headers = {k.lower(): v for k, v in exc.response.headers.items()}


def _openai(clients: _Clients, seen: Seen, dialect: str, stream: bool, model: str, hdrs: dict) -> None:
    client = clients.openai
    try:
        if dialect == "chat":
            raw = client.chat.completions.with_raw_response.create(
                model=model,
                messages=[{"role": "user", "content": PROMPT}],
                max_tokens=MAX_TOKENS,
                stream=stream,
                extra_headers=hdrs,
            )
        else:
            raw = client.responses.with_raw_response.create(
                model=model, input=PROMPT, max_output_tokens=MAX_TOKENS, stream=stream, extra_headers=hdrs
            )
    except openai.APIStatusError as exc:
        _status_error(seen, exc)
        return
    seen.status = raw.status_code
    seen.headers = {k.lower(): v for k, v in raw.headers.items()}
    parsed = raw.parse()
    if not stream:
        seen.completed = True
        if dialect == "chat":
            seen.text = parsed.choices[0].message.content or ""
        else:
            seen.text = parsed.output_text
        seen.meta = (parsed.model_extra or {}).get("modelpool")
        return
    parts: list[str] = []
    try:
        for ev in parsed:
            if dialect == "chat":
                if ev.choices and ev.choices[0].delta.content:
                    parts.append(ev.choices[0].delta.content)
                seen.meta = (ev.model_extra or {}).get("modelpool") or seen.meta
            elif ev.type == "response.output_text.delta":
                parts.append(ev.delta)
            elif ev.type in ("error", "response.failed"):
                seen.error = seen.error or getattr(ev, "message", None) or ev.type
            elif ev.type == "response.completed":
                seen.completed = True
                seen.meta = (ev.response.model_extra or {}).get("modelpool")
    except openai.APIError as exc:
        seen.error = str(exc)
    else:
        if dialect == "chat":
            # the SDK ends quietly on [DONE] and on a bare end of stream alike: the wire tells them apart
            seen.completed = seen.error is None and TERMINATORS["chat"] in clients.tee.raw
    seen.text = "".join(parts)


def _messages(clients: _Clients, seen: Seen, stream: bool, model: str, hdrs: dict) -> None:
    client = clients.anthropic
    try:
        raw = client.messages.with_raw_response.create(
            model=model,
            max_tokens=MAX_TOKENS,
            messages=[{"role": "user", "content": PROMPT}],
            stream=stream,
            extra_headers=hdrs,
        )
    except anthropic.APIStatusError as exc:
        _status_error(seen, exc)
        return
    seen.status = raw.status_code
    seen.headers = {k.lower(): v for k, v in raw.headers.items()}
    parsed = raw.parse()
    if not stream:
        seen.completed = True
        seen.text = "".join(b.text for b in parsed.content if b.type == "text")
        seen.meta = (parsed.model_extra or {}).get("modelpool")
        return
    parts: list[str] = []
    try:
        for ev in parsed:
            if ev.type == "content_block_delta" and ev.delta.type == "text_delta":
                parts.append(ev.delta.text)
            elif ev.type == "message_delta":
                seen.meta = (ev.model_extra or {}).get("modelpool") or seen.meta
            elif ev.type == "message_stop":
                seen.completed = True
    except anthropic.APIError as exc:
        seen.error = str(exc)
    seen.text = "".join(parts)
