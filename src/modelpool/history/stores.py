"""Where session histories live: memory, the sqlite file of the state backend, or Redis (shared by every
replica). Each keeps, per session, a summary (calls, tokens and cost so far, first and last activity, the
last route) and its last `calls_kept` call entries; at most `kept` sessions, none idle for over `ttl`.

Writes come from the book's background flush, never a call.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterable
from typing import Any, Protocol

Entry = dict[str, Any]
Batch = list[tuple[str, Entry]]  # (session id, call entry), oldest first


class Limits(Protocol):
    """`sessions:` in the config (SessionsConfig)."""

    calls_kept: int
    kept: int
    ttl: float


def new_summary(sid: str, at: float) -> dict[str, Any]:
    return {
        "session": sid,
        "first_at": at,
        "last_at": at,
        "calls": 0,
        "failed": 0,
        "tokens_in": 0,
        "tokens_out": 0,
        "cost_usd": 0.0,
        "pool": None,
        "route": None,
        "outcome": None,
    }


def fold(summary: dict[str, Any], entry: Entry) -> None:
    """One call into its session's summary (the totals count every call, kept or not)."""
    summary["calls"] += 1
    if entry.get("outcome") != "ok":
        summary["failed"] += 1
    summary["tokens_in"] += entry.get("tokens_in") or 0
    summary["tokens_out"] += entry.get("tokens_out") or 0
    summary["cost_usd"] += entry.get("cost_usd") or 0.0
    at = entry.get("at") or summary["last_at"]
    summary["first_at"] = min(summary["first_at"], at)
    summary["last_at"] = max(summary["last_at"], at)
    summary["pool"] = entry.get("pool") or summary["pool"]
    summary["route"] = entry.get("route") or summary["route"]
    summary["outcome"] = entry.get("outcome")


def _rounded(summary: dict[str, Any]) -> dict[str, Any]:
    return {**summary, "cost_usd": round(summary["cost_usd"], 10)}


class HistoryStore:
    name = "abstract"

    async def add(self, batch: Batch, now: float, limits: Limits) -> None:
        raise NotImplementedError

    async def session(self, sid: str, now: float, limits: Limits) -> dict[str, Any] | None:
        """`{"summary": …, "calls": [entry, …]}` (calls oldest first), or None."""
        raise NotImplementedError

    async def summaries(self, limit: int, now: float, limits: Limits) -> list[dict[str, Any]]:
        """The most recently active sessions, newest first."""
        raise NotImplementedError

    async def close(self) -> None:
        return None


class _Session:
    __slots__ = ("calls", "summary")

    def __init__(self, summary: dict[str, Any], calls_kept: int) -> None:
        self.summary = summary
        self.calls: deque[Entry] = deque(maxlen=calls_kept)


class MemoryHistoryStore(HistoryStore):
    """This process only (the `memory` state backend): gone at restart."""

    name = "memory"

    def __init__(self) -> None:
        self._sessions: OrderedDict[str, _Session] = OrderedDict()  # least recently active first

    async def add(self, batch: Batch, now: float, limits: Limits) -> None:
        for sid, entry in batch:
            s = self._sessions.get(sid)
            if s is None:
                s = self._sessions[sid] = _Session(
                    new_summary(sid, entry.get("at") or now), limits.calls_kept
                )
            elif s.calls.maxlen != limits.calls_kept:  # the limit changed (config reload)
                s.calls = deque(s.calls, maxlen=limits.calls_kept)
            s.calls.append(entry)
            fold(s.summary, entry)
            self._sessions.move_to_end(sid)
        self._expire(now, limits)

    def _expire(self, now: float, limits: Limits) -> None:
        while len(self._sessions) > limits.kept:
            self._sessions.popitem(last=False)
        horizon = now - limits.ttl
        while self._sessions:
            sid, s = next(iter(self._sessions.items()))
            if s.summary["last_at"] >= horizon:
                break
            del self._sessions[sid]

    async def session(self, sid: str, now: float, limits: Limits) -> dict[str, Any] | None:
        self._expire(now, limits)
        s = self._sessions.get(sid)
        if s is None:
            return None
        return {"summary": _rounded(s.summary), "calls": list(s.calls)}

    async def summaries(self, limit: int, now: float, limits: Limits) -> list[dict[str, Any]]:
        self._expire(now, limits)
        out: list[dict[str, Any]] = []
        for s in reversed(self._sessions.values()):
            if len(out) >= limit:
                break
            out.append(_rounded(s.summary))
        return out


def by_session(batch: Iterable[tuple[str, Entry]]) -> dict[str, list[Entry]]:
    grouped: dict[str, list[Entry]] = {}
    for sid, entry in batch:
        grouped.setdefault(sid, []).append(entry)
    return grouped
