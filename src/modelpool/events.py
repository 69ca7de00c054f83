"""Live events (switches, failures, rests, config changes, questions) and per-session live routes.

Events go to a bounded ring buffer (for `/admin/events` late joiners and the dashboard), to every live
subscriber's queue, and to the log. Publishing is synchronous and never blocks: a slow subscriber whose
queue is full loses events rather than slowing a call down.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

log = logging.getLogger("modelpool.events")
RING = 500
SUBSCRIBER_QUEUE = 1000
MAX_SESSIONS = 1000  # live-route records kept (most recent sessions)


class EventBus:
    def __init__(self) -> None:
        self._ring: deque[dict[str, Any]] = deque(maxlen=RING)
        self._subscribers: set[asyncio.Queue[dict[str, Any]]] = set()
        self._ids = itertools.count(1)
        self._on_unwatched: list[Callable[[], None]] = []
        # The fleet view (shared state, `modelpool.fleet`): where this replica's events go to the others,
        # how many watchers the others have, and who hears of a change in this replica's watchers.
        self.forward: Callable[[dict[str, Any], bool], None] | None = None
        self.remote_watchers: Callable[[], int] | None = None
        self.on_watchers: Callable[[int], None] | None = None

    def publish(self, type: str, *, keep: bool = True, **data: Any) -> dict[str, Any]:
        """`keep=False` sends to live watchers only: per-call events (`served`) would otherwise push the
        rarer switches and failures out of the replay buffer."""
        event = {"id": next(self._ids), "type": type, "at": time.time(), **data}
        if self.forward is not None:
            self.forward(event, keep)
        self._fan_out(event, keep)
        if type in ("switch", "failure", "question"):
            log.info("%s %s", type, {k: v for k, v in data.items() if k != "plan"})
        return event

    def deliver(self, event: dict[str, Any], keep: bool = True) -> None:
        """An event another replica published (the fleet view): to the replay buffer in time order and
        to the live watchers, never forwarded again."""
        ring = self._ring
        self._fan_out(event, keep)
        if keep and len(ring) > 1 and ring[-2]["at"] > event["at"]:  # arrived late (a resync)
            self._ring = deque(sorted(ring, key=lambda e: e["at"]), maxlen=RING)

    def _fan_out(self, event: dict[str, Any], keep: bool) -> None:
        if keep:
            self._ring.append(event)
        for queue in list(self._subscribers):
            try:
                queue.put_nowait(event)
            except asyncio.QueueFull:
                pass  # a stalled watcher loses events; calls never wait for it

    def recent(self, limit: int = 100) -> list[dict[str, Any]]:
        return list(self._ring)[-limit:]

    def subscribe(self) -> asyncio.Queue[dict[str, Any]]:
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(SUBSCRIBER_QUEUE)
        self._subscribers.add(queue)
        if self.on_watchers is not None:
            self.on_watchers(len(self._subscribers))
        return queue

    def unsubscribe(self, queue: asyncio.Queue[dict[str, Any]]) -> None:
        self._subscribers.discard(queue)
        if self.on_watchers is not None:
            self.on_watchers(len(self._subscribers))
        self.check_unwatched()

    def check_unwatched(self) -> None:
        """Nobody watches anywhere any more: tell the consent gate (its open questions proceed)."""
        if not self.watchers:
            for callback in list(self._on_unwatched):
                callback()

    def on_unwatched(self, callback: Callable[[], None]) -> None:
        """Call `callback` whenever the last live watcher goes away (the consent gate fails open)."""
        self._on_unwatched.append(callback)

    @property
    def watchers(self) -> int:
        """Live watchers: this process's, plus the other replicas' when the fleet view is shared."""
        remote = self.remote_watchers
        return len(self._subscribers) + (remote() if remote is not None else 0)

    @property
    def local_watchers(self) -> int:
        return len(self._subscribers)


@dataclass(slots=True)
class LiveRoute:
    """What a session actually ran on (seed: the live-route badge)."""

    session: str
    pool: str
    route: str
    provider: str
    provider_name: str
    model: str  # the provider's own model id
    effort: str | None
    attempts: int
    switched_from: str | None
    at: float
    # Why each route stood where it stood: the plan's `explain`, called only when someone reads the live
    # route (admin API, dashboard) — on every call it was dicts for every route of the pool, then thrown away.
    explain: Callable[[], dict[str, Any]] | None = field(default=None, repr=False, compare=False)

    def to_dict(self, plan: bool = True) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "explain"}
        out["plan"] = self.explain() if plan and self.explain is not None else None
        return out


class SessionLog:
    """Live route per session, bounded LRU. Recorded when the answer's terminal event is produced."""

    def __init__(self, limit: int = MAX_SESSIONS) -> None:
        self._sessions: OrderedDict[str, LiveRoute] = OrderedDict()
        self.limit = limit  # `sessions.kept` once a config is applied
        self.on_record: Callable[[LiveRoute], None] | None = None  # the fleet view ships it (shared state)

    def record(self, live: LiveRoute) -> None:
        self._sessions[live.session] = live
        self._sessions.move_to_end(live.session)
        while len(self._sessions) > self.limit:
            self._sessions.popitem(last=False)
        if self.on_record is not None:
            self.on_record(live)

    def get(self, session: str) -> LiveRoute | None:
        return self._sessions.get(session)

    def all(self) -> list[LiveRoute]:
        return list(reversed(self._sessions.values()))


class LastPlans(dict[str, Any]):
    """The most recent plan per session (bounded), so `/admin/sessions/{id}` can say *why*."""

    LIMIT = 1000

    def __setitem__(self, key: str, value: Any) -> None:
        super().pop(key, None)
        super().__setitem__(key, value)
        if len(self) > self.LIMIT:
            del self[next(iter(self))]
