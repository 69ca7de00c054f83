"""Incremental stream translation between client and upstream dialects (SPEC §1.1, §3.2, §4).

One `StreamTranslator` per client call. It pairs a per-attempt upstream *decoder* (`stream_decode`)
with a per-call client *encoder* (`stream_encode`, `stream_responses`); decoders call encoder
operations, so every (client, upstream) pair — OpenAI chat, Anthropic Messages or Responses clients on
OpenAI-compatible or Anthropic routes — is two small state machines instead of six.

Use from a relay:

    t = StreamTranslator("anthropic", "openai", model=pool_id, input_tokens=estimate)
    for ev in parser.feed(data):
        out = t.feed(ev)            # bytes for the client (may be b""); raises UpstreamStreamError
        if out: send(out)           # t.meaningful / t.committed tell headers and the commit point
        if t.upstream_done: break   # [DONE] / message_stop
    t.set_metadata({...}); send(t.finish())

    # attempt failed before the commit point → next route, same client stream:
    t.reset_upstream("anthropic")

    # failure after the commit point:
    send(t.error("upstream stream broken", "api_error"))   # no success terminator follows

Commit flag: `committed` turns True when the encoder emits content — answer text, refusal or a tool
call — in the client's dialect; reasoning, signatures and lifecycle events never count. Nothing at all is
emitted before the first reasoning/answer operation (message_start, role chunk and response.created
ride along with it), so an attempt that dies early leaves no bytes behind.

`reset_upstream` (only legal before the commit point) swaps in a fresh decoder, forgets the failed
attempt's stop reason and usage, and tells the encoder that a new attempt begins: whatever the client
already saw stays valid (message_start is not repeated, block indices and output indices keep
increasing) and a thinking block / reasoning item the failed attempt left open is closed before the
next attempt's first event, which opens a new one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from modelpool.protocols.anthropic import error_type_for
from modelpool.protocols.gemini.decode import GeminiDecoder
from modelpool.protocols.gemini.encode import GeminiEncoder
from modelpool.protocols.sse import SSEEvent
from modelpool.protocols.stream_decode import AnthropicDecoder, OpenAIDecoder, UpstreamStreamError
from modelpool.protocols.stream_encode import AnthropicEncoder, Encoder, OpenAIEncoder, StreamEnd
from modelpool.protocols.stream_responses import ResponsesEncoder

__all__ = ["CLIENT_DIALECTS", "UPSTREAM_DIALECTS", "StreamTranslator", "UpstreamStreamError"]

CLIENT_DIALECTS = ("openai", "anthropic", "responses", "gemini")
UPSTREAM_DIALECTS = ("openai", "anthropic", "gemini")


class StreamTranslator:
    def __init__(
        self,
        client: str,
        upstream: str,
        *,
        model: str,
        include_usage: bool = False,
        request: dict[str, Any] | None = None,
        input_tokens: int = 0,
    ) -> None:
        """`model` is the name the client sees (the pool id); `include_usage` is the OpenAI client's
        `stream_options.include_usage`; `request` is the Responses request (echoed on the response
        object); `input_tokens` seeds Anthropic's message_start usage when the upstream reports input
        tokens only at the end (OpenAI-compatible routes)."""
        if client not in CLIENT_DIALECTS:
            raise ValueError(f"unknown client dialect {client!r}")
        self.client = client
        self.end = StreamEnd()
        self.enc: Encoder
        if client == "anthropic":
            self.enc = AnthropicEncoder(model)
        elif client == "responses":
            self.enc = ResponsesEncoder(model, request)
        elif client == "gemini":
            self.enc = GeminiEncoder(model)
        else:
            self.enc = OpenAIEncoder(model, include_usage)
        self.enc.input_tokens = input_tokens
        self.upstream = upstream
        self.dec = self._decoder(upstream)
        self.attempts = 1

    def _decoder(self, upstream: str) -> OpenAIDecoder | AnthropicDecoder | GeminiDecoder:
        if upstream == "gemini":
            return GeminiDecoder(self.enc, self.end)
        if upstream == "anthropic":
            return AnthropicDecoder(self.enc, self.end)
        if upstream == "openai":
            return OpenAIDecoder(self.enc, self.end)
        raise ValueError(f"unknown upstream dialect {upstream!r}")

    # -- state the walk reads

    @property
    def committed(self) -> bool:
        return self.enc.committed

    @property
    def meaningful(self) -> bool:
        """Reasoning or content has been emitted: the response headers can go out."""
        return self.enc.meaningful

    @property
    def started(self) -> bool:
        """Some bytes of the client stream have been produced."""
        return self.enc.started

    @property
    def upstream_done(self) -> bool:
        """The current attempt's upstream sent its success terminator ([DONE] / message_stop)."""
        return self.dec.done

    @property
    def usage(self) -> dict[str, int] | None:
        """Normalized usage of the current attempt: prompt_tokens, completion_tokens, total_tokens,
        cached_tokens, cache_creation_tokens, reasoning_tokens (see `mapping`)."""
        return self.end.usage

    @property
    def dropped(self) -> list[str]:
        """What the current attempt's upstream sent that the client's dialect cannot express (server-tool
        blocks, citations, annotations): for `x-modelpool-dropped` and metadata `dropped`."""
        return self.end.dropped

    @property
    def upstream_extra(self) -> dict[str, Any]:
        """Provider metadata seen on the final upstream chunk (e.g. a gateway's routing record)."""
        return self.dec.extra

    # -- driving

    def feed(self, ev: SSEEvent) -> bytes:
        """Bytes for the client (possibly b""). Raises `UpstreamStreamError` for an upstream error
        event/chunk or a malformed one; bytes produced before the bad event stay pending until the
        next `feed`/`finish`/`error` call returns them."""
        try:
            self.dec.feed(ev)
        except (AttributeError, TypeError, KeyError, ValueError, IndexError) as exc:
            # Valid JSON of the wrong shape (zero-cost try in 3.11: the hot path pays nothing).
            raise UpstreamStreamError(f"malformed event from upstream: {type(exc).__name__}: {exc}") from None
        return self.enc.take()

    def feed_all(self, events: Iterable[SSEEvent]) -> bytes:
        out = [self.feed(ev) for ev in events]
        return b"".join(out)

    def reset_upstream(self, upstream: str | None = None) -> None:
        """A new upstream attempt (possibly another dialect) continues the same client stream."""
        if self.enc.committed:
            raise RuntimeError("reset_upstream after the commit point: the attempt cannot be replaced")
        self.end.finish_reason = self.end.stop_reason = self.end.stop_sequence = None
        self.end.usage = None
        self.end.chars = 0
        self.end.dropped = []
        # Bytes still pending from an event that raised stay queued: the encoder's state already
        # counts them as sent, so they go out in front of the next attempt's first output.
        self.enc.new_attempt()
        self.upstream = upstream or self.upstream
        self.dec = self._decoder(self.upstream)
        self.attempts += 1

    def keepalive(self) -> bytes:
        """Bytes to send after long upstream silence (streaming.md §4.4 step 6): an Anthropic `ping`
        event or an SSE comment. Empty before the stream started (nothing may precede the headers)."""
        self.enc.ping()
        return self.enc.take()

    def set_metadata(self, meta: dict[str, Any]) -> None:
        """Attached to the last OpenAI chunk, the Anthropic message_delta or the Responses
        response.completed response object as the extra field `modelpool`."""
        self.end.meta = meta

    def finish(self) -> bytes:
        """The end of a successful stream: close what is open, stop reason, usage, metadata, terminator."""
        self.enc.finish(self.end)
        return self.enc.take()

    def error(self, message: str, type: str | None = None, status: int = 502) -> bytes:
        """The post-commit error event in the client's dialect; no success terminator may follow."""
        kind = error_type_for(type, status) if self.client == "anthropic" else (type or "upstream_error")
        return self.enc.error(message, kind)
