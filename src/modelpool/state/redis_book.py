"""The Redis backend's bookkeeping, without I/O: what waits to be sent, what Redis last confirmed, what this
replica knows (to restore a Redis that lost its data), and how a change from the feed lands locally.

Kept apart from the connection handling so the rules — coalescing, deltas, echo suppression, retries —
read in one place and run synchronously on the event loop (the hot path only ever calls `put`, `delete`
and `bump`, which are dictionary updates).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import orjson

from modelpool.state import redis_ops as ops
from modelpool.state.base import decode, encode
from modelpool.state.expiry import SIGNERS, value_ttl

log = logging.getLogger(__name__)

Listener = Callable[[str, str, Any], None]
HealthOp = tuple[str, str, int, list[Any]]  # route, mode (d|r), seq, script value arguments
Stored = tuple[str, float | None]  # a value's JSON text and when it expires (epoch seconds; None: never)
Item = tuple[str, dict[str, Any]]  # a Redis key and its entry in the batch script's items
Batch = tuple[dict[tuple[str, str], Stored | None], dict[tuple[str, str], list[int]], list[HealthOp]]

LIVE = "live."  # the fleet view's namespaces: ephemeral, never mirrored for a restore
# Not mirrored either: the signer book is bounded in the gateway's memory (`sessions.signatures_kept`), a
# mirror of every entry for a week would not be. A Redis that lost its data loses it; each replica keeps
# what it knows, and a conversation still going shares its entries again when it renews them.
UNMIRRORED = (SIGNERS,)
INFLIGHT_PATIENCE = 5.0  # seconds to wait for the echo of a health merge before taking others' again


class SyncBook:
    def __init__(self, origin: str, keys: ops.Keys) -> None:
        self.origin = origin
        self.keys = keys
        self.listener: Listener | None = None
        # Pending writes, coalesced per key (last write wins; health records fold into one delta).
        self.values: dict[tuple[str, str], Stored | None] = {}
        self.health: dict[str, dict[str, Any]] = {}
        self.bumps: dict[tuple[str, str], list[int]] = {}  # [steps since the last flush, floor]
        self.retry: list[HealthOp] = []  # sent but unacknowledged: resent with the same seq
        # What Redis confirmed (the base of the next delta) and what this replica knows (for a restore).
        self.confirmed: dict[str, dict[str, Any]] = {}
        self.latest: dict[str, dict[str, Any]] = {}
        self.mirror: dict[tuple[str, str], Stored] = {}
        self.floors: dict[tuple[str, str], int] = {}
        self.inflight: dict[str, tuple[int, float]] = {}  # route → (seq, sent at): echo pending
        self.seq = 0

    # -- local changes (hot path) ------------------------------------------------------------------

    def put(self, ns: str, key: str, value: Any) -> None:
        if ns == ops.HEALTH_NS and isinstance(value, dict):
            # A pending delete of the same route stays queued: it is sent first, then this record.
            self.health[key] = self.latest[key] = value
        elif ns in UNMIRRORED:
            self.values[(ns, key)] = stored(ns, key, value)
        else:
            self.values[(ns, key)] = self.mirror[(ns, key)] = stored(ns, key, value)

    def share(self, ns: str, key: str, value: Any, ttl: float) -> None:
        """An ephemeral item: sent once with its TTL, never mirrored (its owner re-shares it)."""
        self.values[(ns, key)] = (encode(value), time.time() + ttl)

    def delete(self, ns: str, key: str) -> None:
        if ns == ops.HEALTH_NS:
            for table in (self.health, self.latest, self.confirmed):
                table.pop(key, None)
        self.mirror.pop((ns, key), None)
        self.values[(ns, key)] = None

    def bump(self, ns: str, key: str, local_value: int) -> None:
        entry = self.bumps.setdefault((ns, key), [0, 0])
        entry[0] += 1
        entry[1] = max(entry[1], local_value)
        self.floors[(ns, key)] = max(self.floors.get((ns, key), 0), local_value)

    @property
    def pending(self) -> int:
        return len(self.values) + len(self.health) + len(self.bumps) + len(self.retry)

    # -- batches -----------------------------------------------------------------------------------

    def take(self, now: float) -> tuple[list[Item], Batch]:
        """Everything pending as batch-script items (values first, so a delete precedes a new record),
        and what to hand back to `requeue` if the batch may not have arrived."""
        values, self.values = self.values, {}
        bumps, self.bumps = self.bumps, {}
        health = self.retry + [self._health_op(route, rec) for route, rec in self.health.items()]
        self.health, self.retry = {}, []
        items = [self._value_item(ns, key, value, now) for (ns, key), value in values.items()]
        for route, mode, seq, args in health:
            self.inflight[route] = (seq, now)
            items.append((self.keys.health(route), {"t": "h", "k": route, "m": mode, "s": seq, "a": args}))
        for (ns, key), (count, floor) in bumps.items():
            items.append(
                (self.keys.counter(ns, key), {"t": "c", "n": ns, "k": key, "by": count, "floor": floor})
            )
        return items, (values, bumps, health)

    def requeue(self, batch: Batch) -> None:
        """A batch that may not have arrived: newer local writes win, health ops are resent as they
        were (their seq makes a second arrival a no-op), counter steps are added back."""
        values, bumps, health = batch
        for item, value in values.items():
            self.values.setdefault(item, value)
        for item, (count, floor) in bumps.items():
            entry = self.bumps.setdefault(item, [0, 0])
            entry[0] += count
            entry[1] = max(entry[1], floor)
        self.retry = health + self.retry

    def _value_item(self, ns: str, key: str, value: Stored | None, now: float) -> Item:
        rkey = self.keys.health(key) if ns == ops.HEALTH_NS else self.keys.value(ns, key)
        if value is None:
            return rkey, {"t": "v", "n": ns, "k": key, "d": 1}
        text, expires = value
        px = max(int((expires - now) * 1000), 1) if expires is not None else 0
        return rkey, {"t": "v", "n": ns, "k": key, "v": text, "px": px}

    def _health_op(self, route: str, record: dict[str, Any]) -> HealthOp:
        self.seq += 1
        args = ops.health_args(self.confirmed.get(route), record)
        self.confirmed[route] = record  # the next delta starts where this one ends
        return route, "d", self.seq, args

    def prune(self, now: float) -> None:
        """Forget expired values (session pins nobody touched again), so the mirror stays bounded."""
        dead = [item for item, (_, until) in self.mirror.items() if until is not None and until <= now]
        for item in dead:
            del self.mirror[item]

    def restore_all(self) -> None:
        """Redis came back empty: queue everything this replica knows, merged by maximum/last write."""
        self.retry = []
        self.inflight.clear()
        for route, record in self.latest.items():
            self.seq += 1
            self.retry.append((route, "r", self.seq, ops.restore_args(record)))
            self.confirmed[route] = record
            self.health.pop(route, None)
        self.prune(time.time())  # an expired pin stays gone
        for item, value in self.mirror.items():
            self.values.setdefault(item, value)
        for item, floor in self.floors.items():
            self.bumps.setdefault(item, [0, floor])

    # -- the change feed and loads -----------------------------------------------------------------

    def on_message(self, data: bytes) -> None:
        msg = orjson.loads(data)
        own = msg["o"] == self.origin
        for item in msg["b"]:
            self._on_change(item, own)

    def _on_change(self, item: dict[str, Any], own: bool) -> None:
        ns, key = item["n"], item["k"]
        if "c" in item:
            self.apply_counter(ns, key, int(item["c"]))
        elif "h" in item:
            if own and self.inflight.get(key, (0, 0.0))[0] <= int(item["s"]):
                self.inflight.pop(key, None)
            self.apply_health(key, ops.decode_health(item["h"]))
        elif not own and (ns, key) not in self.values:  # a newer local write is on its way
            if ns == ops.HEALTH_NS and self.health_busy(key):
                return
            self.apply_value(ns, key, None if item.get("d") == 1 else decode(item["v"]))

    def health_busy(self, route: str) -> bool:
        """A local change to the route is not merged yet: its echo will carry the merged record."""
        if route in self.health:
            return True
        sent = self.inflight.get(route)
        # An echo lost with a dropped connection must not freeze the route: give up on it after a while.
        return sent is not None and time.time() - sent[1] < INFLIGHT_PATIENCE

    def apply_loaded(self, ns: str, values: dict[str, Any]) -> None:
        """A reload's view of one namespace (after an outage or a late first connect)."""
        for key, value in values.items():
            if ns == ops.HEALTH_NS:
                self.apply_health(key, value)
            elif ns == "counters":
                self.apply_counter(ns, key, value)
            elif (ns, key) not in self.values:
                self.apply_value(ns, key, value)

    def confirm_loaded(self, records: dict[str, Any]) -> None:
        """What the gateway loads at start is what Redis confirmed: its next change is a delta from it."""
        for route, record in records.items():
            if not self.health_busy(route):
                self.confirmed[route] = self.latest[route] = record

    def overlay(self, ns: str, result: dict[str, Any]) -> dict[str, Any]:
        """Read-your-writes: a load includes the changes not sent yet."""
        if ns == ops.HEALTH_NS:
            result.update(self.health)
        for (vns, key), value in list(self.values.items()):
            if vns == ns:
                if value is None:
                    result.pop(key, None)
                else:
                    result[key] = decode(value[0])
        return result

    def apply_health(self, route: str, record: dict[str, Any]) -> None:
        if self.health_busy(route):
            return
        self.confirmed[route] = self.latest[route] = record
        self._deliver(ops.HEALTH_NS, route, record)

    def apply_value(self, ns: str, key: str, value: Any) -> None:
        if value is None:
            self.mirror.pop((ns, key), None)
            if ns == ops.HEALTH_NS:
                self.confirmed.pop(key, None)
                self.latest.pop(key, None)
        elif ns != ops.HEALTH_NS and not ns.startswith(LIVE) and ns not in UNMIRRORED:
            self.mirror[(ns, key)] = stored(ns, key, value)
        self._deliver(ns, key, value)

    def apply_counter(self, ns: str, key: str, value: int) -> None:
        self.floors[(ns, key)] = max(self.floors.get((ns, key), 0), value)
        self._deliver(ns, key, value)

    def _deliver(self, ns: str, key: str, value: Any) -> None:
        if self.listener is not None:
            try:
                self.listener(ns, key, value)
            except Exception:
                log.exception("state: applying %s/%s from redis failed", ns, key)


def stored(ns: str, key: str, value: Any) -> Stored:
    now = time.time()
    ttl = value_ttl(ns, key, value, now)
    return encode(value), (now + ttl if ttl is not None else None)
