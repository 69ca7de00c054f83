"""Per-session call history in each store (SPEC §8): the last `calls_kept` calls of a session, at most
`kept` sessions, none idle for longer than `ttl`; totals count every call. Memory, real SQLite, real
redis-server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from modelpool.history import MemoryHistoryStore, SessionHistory
from modelpool.history.redis_store import RedisHistoryStore
from modelpool.history.sqlite_store import SqliteHistoryStore
from modelpool.history.stores import HistoryStore
from redis_server import RedisServer


@dataclass
class Limits:
    calls_kept: int = 200
    kept: int = 2000
    ttl: float = 7 * 86400.0


NOW = 1_800_000_000.0


def entry(n: int, at: float = NOW, route: str = "alpha/m1", outcome: str = "ok") -> dict:
    return {"at": at, "n": n, "pool": "m1", "route": route, "outcome": outcome,
            "tokens_in": 10, "tokens_out": 3, "cost_usd": 0.001}  # fmt: skip


@pytest.fixture(scope="module")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()


@pytest.fixture(params=["memory", "sqlite", "redis"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[HistoryStore]:
    if request.param == "memory":
        made: HistoryStore = MemoryHistoryStore()
    elif request.param == "sqlite":
        made = SqliteHistoryStore(tmp_path / "state.db")
    else:
        server = request.getfixturevalue("redis")
        made = RedisHistoryStore(server.url, f"t{id(tmp_path)}")
    yield made
    await made.close()


async def test_a_session_keeps_its_last_calls_and_counts_all_of_them(store: HistoryStore) -> None:
    limits = Limits(calls_kept=5)

    async def go() -> dict | None:
        for batch in range(3):  # three flushes of four calls each
            await store.add(
                [("s1", entry(batch * 4 + i, NOW + batch * 4 + i)) for i in range(4)], NOW, limits
            )
        await store.add([("s2", entry(99))], NOW, limits)
        return await store.session("s1", NOW + 20, limits)

    got = await go()
    assert got is not None
    assert [c["n"] for c in got["calls"]] == [7, 8, 9, 10, 11]  # the last five, oldest first
    s = got["summary"]
    assert s["session"] == "s1" and s["calls"] == 12 and s["tokens_in"] == 120 and s["tokens_out"] == 36
    assert s["cost_usd"] == pytest.approx(0.012)
    assert s["first_at"] == NOW and s["last_at"] == NOW + 11
    assert s["route"] == "alpha/m1" and s["outcome"] == "ok" and s["failed"] == 0


async def test_at_most_kept_sessions_the_most_recently_active(store: HistoryStore) -> None:
    limits = Limits(kept=3)

    async def go() -> tuple[list[str], dict | None, dict | None]:
        for i in range(3):
            await store.add([(f"s{i}", entry(i, NOW + i))], NOW + i, limits)
        await store.add([("s1", entry(10, NOW + 3, outcome="failed"))], NOW + 3, limits)  # s1 active again
        for i in (3, 4):  # two newcomers: the two least recently active (s0, s2) go
            await store.add([(f"s{i}", entry(i, NOW + 1 + i))], NOW + 1 + i, limits)
        listed = [s["session"] for s in await store.summaries(10, NOW + 10, limits)]
        return (
            listed,
            await store.session("s2", NOW + 10, limits),
            await store.session("s1", NOW + 10, limits),
        )

    listed, gone, back = await go()
    assert listed == ["s4", "s3", "s1"]
    assert gone is None
    assert back is not None and back["summary"]["calls"] == 2 and back["summary"]["failed"] == 1


async def test_sessions_idle_past_the_ttl_are_forgotten(store: HistoryStore) -> None:
    limits = Limits(ttl=3600.0)

    async def go() -> tuple[list[str], dict | None]:
        await store.add([("old", entry(1, NOW))], NOW, limits)
        await store.add([("new", entry(2, NOW + 3000))], NOW + 3000, limits)
        later = NOW + 4000  # `old` idle 4000 s > ttl, `new` 1000 s
        return [s["session"] for s in await store.summaries(10, later, limits)], await store.session(
            "old", later, limits
        )

    listed, old = await go()
    assert listed == ["new"] and old is None


async def test_the_book_stores_in_the_background_what_the_face_appended() -> None:
    async def go() -> tuple[int, dict | None]:
        book = SessionHistory(MemoryHistoryStore(), Limits, clock=lambda: NOW, flush_interval=0.01)
        book.describe = lambda record, wall_at: None if record == "no-session" else ("s", entry(record))
        await book.start()
        pending = book.pending
        for n in (1, "no-session", 2):
            pending.append(n)
        await asyncio.sleep(0.1)  # the background flush, no reader involved
        left = len(book.pending)
        got = await book.store.session("s", NOW, Limits())
        await book.close()
        return left, got

    left, got = await go()
    assert left == 0
    assert got is not None and [c["n"] for c in got["calls"]] == [1, 2]


async def test_a_large_flush_goes_in_slices_and_keeps_every_call_in_order(store: HistoryStore) -> None:
    """A flush of many calls hands the loop back between slices (issue #29: 500 calls in one go stalled
    the call in flight); every call still lands, in order, in one session's history."""
    book = SessionHistory(store, lambda: Limits(calls_kept=1000), clock=lambda: NOW, flush_interval=3600)
    book.describe = lambda record, wall_at: ("s", entry(record))
    book.pending.extend(range(300))  # ~5 slices
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    await book.flush()
    task.cancel()
    got = await store.session("s", NOW, Limits(calls_kept=1000))
    assert got is not None and [c["n"] for c in got["calls"]] == list(range(300))
    assert ticks >= 4  # the loop ran between the slices


async def test_a_flush_cancelled_between_slices_loses_nothing() -> None:
    book = SessionHistory(MemoryHistoryStore(), Limits, clock=lambda: NOW, flush_interval=3600)
    book.describe = lambda record, wall_at: ("s", entry(record))
    book.pending.extend(range(150))
    task = asyncio.create_task(book.flush())
    await asyncio.sleep(0)  # the first slice is described, then the flush yields
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    book.pending.append(150)
    await book.flush()  # what the cancelled flush had taken goes with this one, ahead of the newer call
    got = await book.store.session("s", NOW, Limits())
    assert got is not None and [c["n"] for c in got["calls"]] == list(range(151))[-Limits().calls_kept :]
