"""The Redis backend's I/O-free rules: health deltas, echo suppression, requeue after a failed batch."""

from __future__ import annotations

import time
from typing import Any

import orjson

from modelpool.state import redis_ops as ops
from modelpool.state.redis_book import SyncBook


def record(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "attempts": 0,
        "successes": 0,
        "failures": 0,
        "consecutive_failures": 0,
        "rest_until": 0.0,
        "updated_at": 1.0,
    }
    return {**base, **kw}


def test_a_success_then_a_failure_fold_into_one_delta_that_resets_the_streak() -> None:
    base = record(attempts=5, successes=3, failures=2, consecutive_failures=2, rest_until=100.0)
    new = record(attempts=7, successes=4, failures=3, consecutive_failures=1, rest_until=200.0)
    args = ops.health_args(base, new)
    assert args[:4] == [2, 1, 1, 1]  # +2 attempts, +1 success, +1 failure; streak restarts at 1
    assert args[8] == 200.0


def test_a_reset_local_record_is_sent_whole_rather_than_as_a_negative_delta() -> None:
    args = ops.health_args(record(attempts=9, successes=9), record(attempts=1, successes=1))
    assert args[:3] == [1, 1, 0]


def test_decode_health_reads_the_hash_strings_back_into_a_record() -> None:
    raw = {b"attempts": b"3", b"successes": b"1", b"failures": b"2", b"consecutive_failures": b"2"}
    raw |= {b"rest_until": b"1764470000.5", b"last_error_kind": b"quota", b"seq:abc": b"7"}
    rec = ops.decode_health(raw)
    assert (rec["attempts"], rec["failures"], rec["rest_until"]) == (3, 2, 1764470000.5)
    assert rec["last_error_kind"] == "quota" and rec["last_status"] is None and "seq:abc" not in rec


def feed(origin: str, *items: dict[str, Any]) -> bytes:
    return orjson.dumps({"o": origin, "b": list(items)})


def test_others_changes_to_a_route_wait_for_our_own_merge_to_come_back() -> None:
    book = SyncBook("me", ops.Keys("t"))
    seen: list[tuple[str, str, Any]] = []
    book.listener = lambda ns, key, value: seen.append((ns, key, value))
    book.put("health", "a/x", record(attempts=1, successes=1))
    items, _ = book.take(now=time.time())
    (_, item) = items[0]
    assert item["t"] == "h" and item["a"][:3] == [1, 1, 0]
    merged_by_other = {"attempts": "5", "successes": "5"}
    book.on_message(feed("other", {"n": "health", "k": "a/x", "s": 1, "h": merged_by_other}))
    assert seen == []  # our merge is in flight: its echo carries the other's change too
    merged = {"attempts": "6", "successes": "6"}
    book.on_message(feed("me", {"n": "health", "k": "a/x", "s": item["s"], "h": merged}))
    assert seen and seen[0][2]["attempts"] == 6
    assert book.confirmed["a/x"]["attempts"] == 6  # the next delta starts from the merged record


def test_a_failed_batch_is_requeued_behind_newer_writes_and_with_the_same_health_seq() -> None:
    book = SyncBook("me", ops.Keys("t"))
    book.put("pins", "pool:p", {"route": "a/x"})
    book.put("health", "a/x", record(attempts=1, successes=1))
    book.bump("counters", "cursor:p", 3)
    items, batch = book.take(now=10.0)
    seq = next(i["s"] for _, i in items if i["t"] == "h")
    book.put("pins", "pool:p", {"route": "b/x"})  # written while the batch was out
    book.requeue(batch)
    again, _ = book.take(now=11.0)
    by_type = {i["t"]: i for _, i in again}
    assert orjson.loads(by_type["v"]["v"]) == {"route": "b/x"}
    assert by_type["h"]["s"] == seq  # resent as it was: Redis skips it if it did arrive
    assert (by_type["c"]["by"], by_type["c"]["floor"]) == (1, 3)


def test_a_session_pin_carries_its_lifetime_as_the_key_expiry() -> None:
    book = SyncBook("me", ops.Keys("t"))
    book.put("pins", "session:s\x1fp", {"route": "a/x", "last_used": 100.0, "lifetime": 60})
    book.put("pins", "pool:p", {"route": "a/x"})
    items, _ = book.take(now=130.0)
    px = {key: item["px"] for key, item in items}
    assert px["t:kv:pins:pool:p"] == 0  # no expiry
    # Expired pins are pruned from the restore mirror, live values stay.
    book.prune(now=10**10)
    assert list(book.mirror) == [("pins", "pool:p")]
