"""The byte scans of `fastscan`, in Python: what runs when the C extension was not built (no compiler at
install time), and the reference the extension is tested against (tests/fastscan)."""

from __future__ import annotations

import functools
import re


def plain_prefix(data: bytes, start: int, marker: bytes, error: bytes) -> int:
    """Where the run of whole `\n\n`-framed events from `start`, each containing `marker`, ends, stopping
    short of the first `error`; `start` if none, and always `start` when `data` has a `\r` (CRLF framing
    takes the event path)."""
    if b"\r" in data:
        return start
    at = data.find(error, start)
    stop = at if at >= 0 else len(data)
    # One regex match (in C) over the usual one-line events, then a loop for what it does not take
    # (multi-line events): the same rule, a per-event loop of `find` calls being ~2× slower.
    run = _one_line_events(marker).match(data, start, stop)
    pos = run.end() if run is not None else start
    find = data.find
    while True:
        end = find(b"\n\n", pos, stop)
        if end < 0 or find(marker, pos, end) < 0:
            return pos
        pos = end + 2


@functools.lru_cache(maxsize=8)
def _one_line_events(marker: bytes) -> re.Pattern[bytes]:
    return re.compile(rb"(?:[^\n]*" + re.escape(marker) + rb"[^\n]*\n\n)+")


def plain_run(data: bytes, pos: int, specials: tuple[bytes, ...], sep: bytes) -> int:
    """Where the run of whole `sep`-framed events from `pos` in which none of `specials` occurs ends (`pos`
    if none, or if the run's braces do not balance: a truncated event takes the event path)."""
    find = data.find
    first = len(data)
    for special in specials:
        at = find(special, pos, first)
        if at >= 0:
            first = at
    end = data.rfind(sep, pos, first)
    if end < 0 or not balanced(data, pos, end):
        return pos
    return end + len(sep)


def has_any(data: bytes, needles: tuple[bytes, ...]) -> bool:
    return any(n in data for n in needles)


def remove_all(data: bytes, needle: bytes) -> bytes:
    return data.replace(needle, b"") if needle else data


def balanced(data: bytes, start: int, end: int) -> bool:
    """As many `{` as `}` in `data[start:end]`."""
    return data.count(b"{", start, end) == data.count(b"}", start, end)


def lf_only(data: bytes) -> bytes:
    """CRLF and a lone CR made LF: the SSE parser's one framing."""
    return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n") if b"\r" in data else data
