"""Finding signatures in bytes: every upstream read of a relay (cheap when there are none: two substring
tests) and a request's raw body (a regex only when a marker is there)."""

from __future__ import annotations

import hashlib
import re

import orjson

from modelpool.fastscan import has_any
from modelpool.protocols.translate_reasoning import REDACTED_MARK, SIG_MARK

# `"signature":"…"` (Anthropic, incl. signature_delta), `"encrypted_content":"…"` (Responses),
# `"thoughtSignature":"…"` / `"thought_signature":"…"` (Gemini); redacted thinking's `"data":"…"` is not
# looked for (its blocks are recognised structurally when stripping).
_VALUE = re.compile(
    rb'"(?:signature|encrypted_content|thoughtSignature|thought_signature)"\s*:\s*"((?:[^"\\]|\\.)*)"'
)
_MARKERS = (b'ignature"', b'encrypted_content"')
_CARRY = 256 * 1024  # a signature split across reads is looked for again with the next read, up to this


def digest(value: str) -> str:
    """What the book keys a signature by (never the signature itself)."""
    return hashlib.sha256(value.encode()).hexdigest()[:24]


def _values(data: bytes) -> list[str]:
    out = []
    for m in _VALUE.finditer(data):
        raw = m.group(1)
        value = orjson.loads(b'"' + raw + b'"') if b"\\" in raw else raw.decode("utf-8", "replace")
        if value:
            out.append(value)
    return out


def _has_marker(data: bytes) -> bool:
    return has_any(data, _MARKERS)  # one C pass each (fastscan): every upstream read goes through here


class SignatureScan:
    """One attempt's reads: collects (route, digest) of every signature the upstream sent."""

    __slots__ = ("_carry", "out", "route")

    def __init__(self, route: str, out: list[tuple[str, str]]) -> None:
        self.route = route
        self.out = out
        self._carry = b""

    def feed(self, data: bytes) -> None:
        if self._carry:
            data, self._carry = self._carry + data, b""
        elif not _has_marker(data):
            return
        end = 0
        for m in _VALUE.finditer(data):
            end = m.end()
        self.out.extend((self.route, digest(v)) for v in _values(data[:end]) if end)
        rest = data[end:]
        if _has_marker(rest) and len(rest) < _CARRY:
            self._carry = rest  # a marker whose value has not arrived whole yet


def request_digests(raw: bytes) -> list[str]:
    """Digests of the signatures in a request body, oldest first. A signature modelpool sealed into a
    translated reasoning item counts as the upstream signature inside it."""
    if not _has_marker(raw):
        return []
    out = []
    for value in _values(raw):
        for mark in (SIG_MARK, REDACTED_MARK):
            if value.startswith(mark):
                value = value[len(mark) :]
        out.append(digest(value))
    return out
