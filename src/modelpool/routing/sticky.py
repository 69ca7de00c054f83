"""Sticky pins (SPEC §3.3) and operator pins (`modelpool pin`).

A *session pin* keeps a conversation on the route that served it, so the provider's prompt cache stays
warm. It is keyed by (session, pool), expires after the route provider's `cache_lifetime` of idleness,
and is dropped when its route fails. It is a preference, not a lock: the planner only honours it while
the route is a healthy candidate.

An *operator pin* puts one route at the head of a pool's order for every call; the ranking decides the
tail. Both persist through the state backend (namespace `pins`) so a restart keeps them.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MAX_SESSION_PINS = 50_000  # bounds memory; the least recently used conversation is forgotten first


@dataclass(slots=True)
class SessionPin:
    route: str
    last_used: float
    lifetime: float

    def expired(self, now: float) -> bool:
        return now - self.last_used > self.lifetime


Persist = Callable[[str, Any], None]
Forget = Callable[[str], None]


class PinStore:
    def __init__(self, persist: Persist | None = None, forget: Forget | None = None) -> None:
        self._sessions: OrderedDict[tuple[str, str], SessionPin] = OrderedDict()
        self._operator: dict[str, str] = {}
        self._persist = persist
        self._forget = forget

    # ---- session pins -------------------------------------------------------------------------

    def get(self, session: str, pool: str, now: float | None = None) -> SessionPin | None:
        key = (session, pool)
        pin = self._sessions.get(key)
        if pin is None:
            return None
        if pin.expired(time.time() if now is None else now):
            self.drop(session, pool)
            return None
        return pin

    def set(self, session: str, pool: str, route: str, lifetime: float, now: float | None = None) -> None:
        at = time.time() if now is None else now
        key = (session, pool)
        pin = self._sessions.get(key)
        if pin is not None and pin.route == route:
            pin.last_used = at
            pin.lifetime = lifetime
            self._sessions.move_to_end(key)
        else:
            self._sessions[key] = SessionPin(route, at, lifetime)
            if len(self._sessions) > MAX_SESSION_PINS:
                (old_session, old_pool), _ = self._sessions.popitem(last=False)
                self._unpersist(old_session, old_pool)
        # Persisting on every touch keeps idleness accurate across restarts; the backend batches writes.
        if self._persist is not None:
            self._persist(
                _storage_key(session, pool), {"route": route, "last_used": at, "lifetime": lifetime}
            )

    def drop(self, session: str, pool: str) -> None:
        if self._sessions.pop((session, pool), None) is not None:
            self._unpersist(session, pool)

    def drop_route(self, route: str) -> int:
        """A route that failed loses every session pinned to it (SPEC §3.3)."""
        gone = [k for k, p in self._sessions.items() if p.route == route]
        for session, pool in gone:
            self.drop(session, pool)
        return len(gone)

    def sessions(self) -> dict[tuple[str, str], SessionPin]:
        return dict(self._sessions)

    def _unpersist(self, session: str, pool: str) -> None:
        if self._forget is not None:
            self._forget(_storage_key(session, pool))

    # ---- operator pins ------------------------------------------------------------------------

    def operator(self, pool: str) -> str | None:
        return self._operator.get(pool)

    def set_operator(self, pool: str, route: str | None) -> None:
        key = "pool:" + pool
        if route is None:
            self._operator.pop(pool, None)
            if self._forget is not None:
                self._forget(key)
        else:
            self._operator[pool] = route
            if self._persist is not None:
                self._persist(key, {"route": route})

    def operators(self) -> dict[str, str]:
        return dict(self._operator)

    # ---- persistence ----------------------------------------------------------------------------

    def apply(self, key: str, value: Any, now: float | None = None) -> None:
        """A pin another process set (`value`) or dropped (None), from the shared state: applied to
        memory only, never persisted back."""
        if value is not None:
            self.load({key: value}, now)
            while len(self._sessions) > MAX_SESSION_PINS:  # local memory only: the shared copy stays
                self._sessions.popitem(last=False)
        elif key.startswith("pool:"):
            self._operator.pop(key[5:], None)
        elif key.startswith("session:"):
            session, _, pool = key[8:].rpartition("\x1f")
            self._sessions.pop((session, pool), None)

    def load(self, records: dict[str, Any], now: float | None = None) -> None:
        at = time.time() if now is None else now
        for key, value in records.items():
            if not isinstance(value, dict) or not isinstance(value.get("route"), str):
                continue
            if key.startswith("pool:"):
                self._operator[key[5:]] = value["route"]
            elif key.startswith("session:"):
                session, _, pool = key[8:].rpartition("\x1f")
                try:
                    pin = SessionPin(value["route"], float(value["last_used"]), float(value["lifetime"]))
                except (KeyError, TypeError, ValueError):
                    continue
                if session and not pin.expired(at):
                    self._sessions[(session, pool)] = pin
                    self._sessions.move_to_end((session, pool))


def _storage_key(session: str, pool: str) -> str:
    return f"session:{session}\x1f{pool}"
