"""Which route signed what: signature digest → route (with the session it was relayed in), bounded, persisted
and shared like pins (§9).

Written when a walk's reply is complete (never by a failed call's half answer that the client did not keep),
read when a conversation's next request is planned. The hot path reads only this process's memory; other
replicas' entries arrive through the state backend's change feed (`engine.replica`).

Bounds: a signature is only ever echoed back within its conversation, so an entry lives as long as a session
(`sessions.ttl` of idleness): each entry carries its `until`, the state backend keeps it no longer (a Redis
key's TTL, an sqlite row's expiry), and memory forgets it then too. A conversation still going renews the
entries it carries (persisted again once half their lifetime has passed, not on every call). Memory keeps at
most `sessions.signatures_kept` entries, the least recently used forgotten first (only here: the shared copy
lives out its TTL).
"""

from __future__ import annotations

import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple, Protocol

from modelpool.signers.scan import request_digests

Persist = Callable[[str, Any], None]


class Limits(Protocol):
    """The config's `sessions` (read when needed, so a reload applies at once)."""

    @property
    def ttl(self) -> float: ...  # an entry's lifetime: a session's

    @property
    def signatures_kept(self) -> int: ...  # entries kept in memory


class BookLimits(NamedTuple):
    ttl: float = 7 * 24 * 3600.0
    signatures_kept: int = 200_000


class Signed(NamedTuple):
    route: str
    session: str | None
    until: float  # epoch seconds: forgotten after this, here and in the state backend

    def value(self) -> dict[str, Any]:
        """What the state backend stores (its TTL is read from `until`: `state.expiry.value_ttl`)."""
        out: dict[str, Any] = {"route": self.route, "until": self.until}
        if self.session is not None:
            out["session"] = self.session
        return out


class SignerBook:
    def __init__(
        self,
        persist: Persist | None = None,
        limits: Callable[[], Limits] = BookLimits,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._entries: OrderedDict[str, Signed] = OrderedDict()
        self._persist = persist
        self._limits = limits
        self._clock = clock

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, signed: Iterable[tuple[str, str]], session: str | None = None) -> None:
        """(route, digest) pairs a reply of `session` carried. One the book holds as it is, renewed less than
        half a lifetime ago, is not written again."""
        now, lifetime = self._clock(), self._limits().ttl
        entries = self._entries
        for route, dig in signed:
            old = entries.get(dig)
            if old is None or old[:2] != (route, session) or old.until < now + lifetime / 2:
                entries[dig] = entry = Signed(route, session, now + lifetime)
                if self._persist is not None:
                    self._persist(dig, entry.value())
            entries.move_to_end(dig)
        self._trim()

    def signers(self, digests: Iterable[str]) -> dict[str, str]:
        """digest → route for the digests it knows and still keeps (unknown signers are left alone: not
        ours to judge). A conversation that echoes an entry keeps it: it is the most recently used, and once
        half its lifetime has passed it is renewed (persisted again, in the background)."""
        entries = self._entries
        found = [(d, entries[d]) for d in dict.fromkeys(digests) if d in entries]
        if not found:
            return {}
        now = self._clock()
        lifetime = self._limits().ttl
        renew_before = now + lifetime / 2
        out = {}
        for dig, entry in found:
            if entry.until <= now:
                entries.pop(dig, None)
                continue
            entries.move_to_end(dig)
            if entry.until < renew_before:
                entry = entries[dig] = entry._replace(until=now + lifetime)
                if self._persist is not None:
                    self._persist(dig, entry.value())
            out[dig] = entry.route
        return out

    def of_request(self, raw: bytes) -> tuple[dict[str, str], str | None]:
        """The known signers of a request's signatures (digest → route) and the latest one's route. Two
        substring tests when the history holds no signature."""
        digests = request_digests(raw)
        if not digests:
            return {}, None
        known = self.signers(digests)
        return known, next((known[d] for d in reversed(digests) if d in known), None)

    def of_session(self, session: str) -> dict[str, int]:
        """route → how many of the session's signatures it made (the session page; a scan, admin only)."""
        now = self._clock()
        mine = (e.route for e in self._entries.values() if e.session == session and e.until > now)
        return dict(Counter(mine))

    def load(self, stored: Mapping[str, Any]) -> None:
        """The state backend's entries at start-up: the unexpired ones, the newest `limit` of them. An entry
        stored before entries had a lifetime (a bare route) gets one now, and is written back with it."""
        now, limits = self._clock(), self._limits()
        found = []
        for dig, value in stored.items():
            entry = self._parse(value, now, limits.ttl)
            if entry is None:
                continue
            found.append((dig, entry))
            if isinstance(value, str) and self._persist is not None:
                self._persist(dig, entry.value())
        found.sort(key=lambda item: item[1].until)
        for dig, entry in found[-limits.signatures_kept :]:
            self._entries[dig] = entry
            self._entries.move_to_end(dig)
        self._trim()

    def apply(self, dig: str, value: Any) -> None:
        """Another replica's entry (its change feed): memory only, never persisted back."""
        entry = self._parse(value, self._clock(), self._limits().ttl)
        if entry is None:
            self._entries.pop(dig, None)
            return
        self._entries[dig] = entry
        self._entries.move_to_end(dig)
        self._trim()

    @staticmethod
    def _parse(value: Any, now: float, lifetime: float) -> Signed | None:
        if isinstance(value, str):  # the first format: the route alone, no lifetime
            return Signed(value, None, now + lifetime)
        if not isinstance(value, dict) or not isinstance(value.get("route"), str):
            return None
        try:
            until = float(value["until"])
        except (KeyError, TypeError, ValueError):
            return None
        if until <= now:
            return None
        session = value.get("session")
        return Signed(value["route"], session if isinstance(session, str) else None, until)

    def _trim(self) -> None:
        entries = self._entries
        limit = self._limits().signatures_kept
        while len(entries) > limit:
            entries.popitem(last=False)
        if entries:  # the least recently used are the likeliest to have expired: a cheap sweep from there
            now = self._clock()
            while entries and next(iter(entries.values())).until <= now:
                entries.popitem(last=False)
