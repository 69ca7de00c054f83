"""What each provider saw: one `CallRecord` per chat call, for test and benchmark assertions.

A record keeps the path, the dialect, the request headers (credential headers left out: only their names
are kept, and `key_ok` says whether the provider's key matched) and the raw body bytes as received, so a
test can compare the upstream body with what its client sent.
"""

from __future__ import annotations

import base64
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import Any

from modelpool.sim.spec import Fault

# Recorded headers leave credentials out: the record only says whether the key matched (`key_ok`).
SECRET_HEADERS = frozenset({"authorization", "x-api-key", "x-goog-api-key", "proxy-authorization", "cookie"})

MAX_RECORDS = 100_000  # per provider: bounds memory in long benchmark runs


@dataclass
class CallRecord:
    provider: str
    path: str
    time: float  # wall clock at arrival
    model: str | None = None
    stream: bool = False
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    key_ok: bool | None = None  # None: the provider needs no key
    outcome: str = "ok"  # "ok", a fault kind, "http_<status>" (request refused), "disconnected"
    status: int = 200
    fault: Fault | None = None
    inner: str | None = None  # aggregator: the inner provider that served (or last tried)
    inner_attempts: list[str] = field(default_factory=list)
    content_tokens: int = 0  # content frames actually sent
    dialect: str = "openai"  # openai (Chat Completions) | anthropic (Messages) | responses
    raw_body: bytes = b""  # the request body exactly as received
    secret_headers: list[str] = field(default_factory=list)  # credential headers present (names only)
    query: str = ""  # the request's query string (Claude Code calls `/v1/messages?beta=true`)
    tail_stall: float = 0.0  # seconds this call stalled before its first byte (`ttft_tail`)
    # The client hung up before the reply ended — also during a scripted fault (e.g. a stall before the
    # first byte that a hedge race cancelled), when `outcome` keeps the fault's kind.
    disconnected: bool = False
    disconnected_at: float | None = None  # wall clock

    def to_dict(self) -> dict[str, Any]:
        """JSON-able (the control API): the raw body as base64 in `raw_body_b64`."""
        out = asdict(self)
        out["fault"] = self.fault.to_dict() if self.fault is not None else None
        out.pop("raw_body")
        out["raw_body_b64"] = base64.b64encode(self.raw_body).decode()
        return out


class Recorder:
    def __init__(self) -> None:
        self._calls: deque[CallRecord] = deque(maxlen=MAX_RECORDS)

    def add(self, record: CallRecord) -> None:
        self._calls.append(record)

    def list(self) -> list[CallRecord]:
        return list(self._calls)

    def clear(self) -> None:
        self._calls.clear()
