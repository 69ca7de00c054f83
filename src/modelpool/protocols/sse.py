"""Incremental Server-Sent Events parser (SPEC §4).

Robust to everything real upstreams do: events split across reads (even mid UTF-8 sequence, since we
work on bytes and decode per complete event), `\\r\\n` and bare `\\r` line endings, comment lines,
multi-line `data:` fields, and a final event without its blank line (`close()` returns it).

Hand-written rather than taken from a library: this runs once per upstream chunk on the hot path and
the common case (`\\n`-only framing) is a couple of `bytes.find` calls.
"""

from __future__ import annotations

from dataclasses import dataclass

from modelpool.fastscan import lf_only  # one C pass (a Gemini burst read is CRLF-framed, ~50 KB)


@dataclass(slots=True)
class SSEEvent:
    event: str | None
    data: bytes  # data lines joined with b"\n"; b"" when the event carried no data field
    raw: bytes  # the event as framed on the wire (normalised to \n), incl. the blank line

    @property
    def is_done(self) -> bool:
        return self.data == b"[DONE]"


class SSEParser:
    __slots__ = ("_buf",)

    def __init__(self) -> None:
        self._buf = b""

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        buf = self._buf + chunk if self._buf else chunk
        if b"\r" in buf:
            # A \r at the very end may be the first half of \r\n: keep it for the next read.
            tail = b""
            if buf.endswith(b"\r"):
                buf, tail = buf[:-1], b"\r"
            buf = lf_only(buf)
            events, rest = _split(buf)
            self._buf = rest + tail
            return events
        events, self._buf = _split(buf)
        return events

    def feed_lazy(self, chunk: bytes) -> Events:
        """Like `feed`, but the read's whole events are parsed one at a time, on demand (`Events`): a
        relay that stops inspecting after the commit point takes the rest of the read as bytes instead of
        paying for an event object per chunk. The incomplete tail stays here for the next read."""
        buf = self._buf + chunk if self._buf else chunk
        tail = b""
        if b"\r" in buf:
            if buf.endswith(b"\r"):
                buf, tail = buf[:-1], b"\r"
            buf = lf_only(buf)
        end = buf.rfind(b"\n\n") + 2  # 1 when there is no whole event yet
        if end < 2:
            self._buf = buf + tail
            return Events(b"")
        self._buf = buf[end:] + tail
        return Events(buf if end == len(buf) else buf[:end])

    def close(self) -> list[SSEEvent]:
        """End of stream: an unterminated last event still counts if it has fields."""
        rest = lf_only(self._buf).strip(b"\n")
        self._buf = b""
        if not rest:
            return []
        ev = _parse_block(rest, rest + b"\n\n")
        return [ev] if ev is not None else []

    @property
    def pending(self) -> bytes:
        return self._buf


class Events:
    """The whole events of one read (`SSEParser.feed_lazy`): `next()` parses the next one, `take(end)`
    hands over the raw bytes up to `end` unparsed. A lone newline left at the end (a blank line the
    framing split oddly) carries no event."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data  # whole events, `\n` framing
        self.pos = 0

    def next(self) -> SSEEvent | None:
        data, find = self.data, self.data.find
        while True:
            end = find(b"\n\n", self.pos)
            if end < 0:
                return None
            block, raw = data[self.pos : end], data[self.pos : end + 2]
            self.pos = end + 2
            if block and (ev := _parse_block(block, raw)) is not None:
                return ev

    def take(self, end: int) -> bytes:
        start, self.pos = self.pos, end
        return self.data if start == 0 and end == len(self.data) else self.data[start:end]


def _split(buf: bytes) -> tuple[list[SSEEvent], bytes]:
    events: list[SSEEvent] = []
    start = 0
    find = buf.find
    while True:
        end = find(b"\n\n", start)
        if end < 0:
            return events, buf[start:]
        block = buf[start:end]
        raw = buf[start : end + 2]
        start = end + 2
        if not block:
            continue  # extra blank lines between events
        ev = _parse_block(block, raw)
        if ev is not None:
            events.append(ev)


def _parse_block(block: bytes, raw: bytes) -> SSEEvent | None:
    # Fast path: the overwhelmingly common single `data: …` line.
    if block.startswith(b"data:") and b"\n" not in block:
        value = block[5:]
        if value.startswith(b" "):
            value = value[1:]
        return SSEEvent(None, value, raw)
    event: str | None = None
    data: list[bytes] = []
    has_field = False
    for line in block.split(b"\n"):
        if not line or line.startswith(b":"):
            continue  # comment / keep-alive
        name, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if name == b"data":
            data.append(value)
            has_field = True
        elif name == b"event":
            event = value.decode("utf-8", "replace")
            has_field = True
    if not has_field:
        return None
    return SSEEvent(event, b"\n".join(data), raw)


def encode_event(data: bytes, event: str | None = None) -> bytes:
    if event is None:
        return b"data: " + data + b"\n\n"
    return b"event: " + event.encode() + b"\ndata: " + data + b"\n\n"
