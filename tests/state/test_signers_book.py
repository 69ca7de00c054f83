"""The signer book's bounds (SPEC §3.10, §8, §9): an entry lives as long as a session (`sessions.ttl`) in
memory, in the sqlite file and in Redis (a TTL on the key), memory keeps at most `sessions.signatures_kept`
entries (the least recently used forgotten first), and each entry records the session it was relayed in."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest
import redis.asyncio as aioredis

from gateway_server import GatewayServer
from modelpool.signers.book import BookLimits, SignerBook
from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider
from modelpool.state import SqliteBackend
from modelpool.state.redis_backend import RedisBackend
from redis_server import RedisServer
from support import base_config


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def book(
    clock: Clock, kept: int = 200_000, ttl: float = 3600.0, persist: Callable[[str, Any], None] | None = None
) -> SignerBook:
    return SignerBook(persist, limits=lambda: BookLimits(ttl=ttl, signatures_kept=kept), clock=clock)


def test_memory_keeps_at_most_signatures_kept_the_least_recently_used_forgotten_first() -> None:
    signers = book(Clock(), kept=3)
    signers.add([("a/m", "d1"), ("a/m", "d2"), ("b/m", "d3")], "s1")
    assert signers.signers(["d1"]) == {"d1": "a/m"}  # d1 is used again: d2 is now the oldest
    signers.add([("b/m", "d4"), ("b/m", "d5")], "s2")
    assert len(signers) == 3
    assert signers.signers(["d1", "d2", "d3", "d4", "d5"]) == {"d1": "a/m", "d4": "b/m", "d5": "b/m"}
    for n in range(1000):  # a long run stays within the bound
        signers.add([("a/m", f"x{n}")], f"s{n}")
    assert len(signers) == 3


def test_an_entry_is_forgotten_after_the_session_ttl_and_renewed_while_its_conversation_goes_on() -> None:
    clock = Clock()
    written: list[tuple[str, Any]] = []
    signers = book(clock, ttl=100.0, persist=lambda key, value: written.append((key, value)))
    signers.add([("a/m", "d1"), ("a/m", "d2")], "s1")
    assert written == [
        ("d1", {"route": "a/m", "until": clock.now + 100.0, "session": "s1"}),
        ("d2", {"route": "a/m", "until": clock.now + 100.0, "session": "s1"}),
    ]
    signers.add([("a/m", "d1")], "s1")  # relayed again, as it is: nothing to write
    assert len(written) == 2
    clock.now += 40  # used before half its lifetime: nothing written again
    assert signers.signers(["d1"]) == {"d1": "a/m"} and len(written) == 2
    clock.now += 20  # past half its lifetime: renewed, and written with its new end
    assert signers.signers(["d1"]) == {"d1": "a/m"}
    assert written[-1] == ("d1", {"route": "a/m", "until": clock.now + 100.0, "session": "s1"})
    clock.now += 41  # d2's lifetime is over, d1's is not
    assert signers.signers(["d1", "d2"]) == {"d1": "a/m"}
    assert len(signers) == 1 and signers.of_session("s1") == {"a/m": 1}
    clock.now += 101
    assert signers.of_request(b'{"signature":"x"}') == ({}, None)
    signers.add([("b/m", "d3")], "s2")  # adding sweeps what expired
    assert len(signers) == 1


def test_load_keeps_the_unexpired_newest_entries_and_gives_old_bare_routes_a_lifetime() -> None:
    clock = Clock()
    written: list[tuple[str, Any]] = []
    signers = book(clock, kept=2, ttl=100.0, persist=lambda key, value: written.append((key, value)))
    signers.load(
        {
            "old": {"route": "a/m", "until": clock.now - 1, "session": "s1"},  # expired
            "d1": {"route": "a/m", "until": clock.now + 10, "session": "s1"},  # the oldest of the three
            "d2": {"route": "b/m", "until": clock.now + 50, "session": "s2"},
            "bare": "c/m",  # the book's first format: a route, no lifetime
            "junk": {"until": clock.now + 50},
        }
    )
    assert signers.signers(["old", "d1", "d2", "bare", "junk"]) == {"d2": "b/m", "bare": "c/m"}
    assert written == [("bare", {"route": "c/m", "until": clock.now + 100.0})]  # written back with its TTL
    signers.apply("d3", {"route": "a/m", "until": clock.now + 5})  # another replica's
    signers.apply("d4", {"route": "a/m", "until": clock.now - 5})  # expired on the way: not kept
    assert signers.signers(["d3", "d4"]) == {"d3": "a/m"} and len(signers) == 2
    signers.apply("d3", None)
    assert signers.signers(["d3"]) == {}


def _signer_rows(path: Path) -> list[tuple[str, float | None]]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT key, expires FROM kv WHERE ns = 'signers' ORDER BY key").fetchall()


async def test_sqlite_keeps_an_entry_until_its_ttl_then_neither_loads_nor_keeps_it(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    backend = SqliteBackend(path, flush_interval=0.05, prune_every=0.2)
    await backend.start()
    try:
        signers = book(Clock(time.time()), ttl=1.0, persist=lambda k, v: backend.put("signers", k, v))
        signers.add([("a/m", "d1")], "s1")
        backend.put("meta", "version", "1")  # no lifetime: kept for good
        await backend.flush()
        rows = _signer_rows(path)
        assert [key for key, _ in rows] == ["d1"]
        assert rows[0][1] is not None and 0 < rows[0][1] - time.time() <= 1.0
        assert (await backend.load("signers"))["d1"]["session"] == "s1"
        await asyncio.sleep(1.1)
        assert await backend.load("signers") == {}  # past its lifetime: never loaded again
        for _ in range(300):  # the background task deletes the row (bounded wait, not a timing assertion)
            if not _signer_rows(path):
                break
            await asyncio.sleep(0.02)
        assert _signer_rows(path) == []
        assert await backend.load("meta") == {"version": "1"}
    finally:
        await backend.close()


async def test_an_sqlite_file_written_before_values_had_a_lifetime_is_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE kv (ns TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, "
            "updated REAL NOT NULL, PRIMARY KEY (ns, key))"
        )
        conn.execute("INSERT INTO kv VALUES ('signers', 'd0', '\"a/m\"', 1.0)")
    backend = SqliteBackend(path, flush_interval=3600)
    await backend.start()
    try:
        assert await backend.load("signers") == {"d0": "a/m"}
        backend.put("signers", "d1", {"route": "a/m", "until": time.time() + 60})
        await backend.flush()
        assert [key for key, _ in _signer_rows(path)] == ["d0", "d1"]
    finally:
        await backend.close()


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path / "redis").start()
    yield server
    server.stop()


async def test_redis_keeps_an_entry_for_its_ttl_on_every_replica_then_forgets_it(
    redis_server: RedisServer,
) -> None:
    one = RedisBackend(redis_server.url, prefix="t")
    two = RedisBackend(redis_server.url, prefix="t")
    ttl = 1.5
    limits = lambda: BookLimits(ttl=ttl)  # noqa: E731
    signers_one = SignerBook(lambda k, v: one.put("signers", k, v), limits=limits, clock=time.time)
    signers_two = SignerBook(limits=limits, clock=time.time)
    two.set_listener(lambda ns, key, value: signers_two.apply(key, value) if ns == "signers" else None)
    await one.start()
    await two.start()
    client = aioredis.Redis.from_url(redis_server.url)
    try:
        signers_one.add([("a/m", "d1")], "s1")
        await one.flush()
        left = await client.pttl("t:kv:signers:d1")
        assert 0 < left <= ttl * 1000  # the key dies with the session
        for _ in range(250):  # the change feed reaches the other replica (bounded wait)
            if signers_two.signers(["d1"]):
                break
            await asyncio.sleep(0.02)
        assert signers_two.signers(["d1"]) == {"d1": "a/m"} and signers_two.of_session("s1") == {"a/m": 1}
        assert one.book.mirror == {}  # not mirrored for a restore: memory stays bounded by the book alone
        await asyncio.sleep(ttl + 0.1)
        assert await client.exists("t:kv:signers:d1") == 0
        assert signers_two.signers(["d1"]) == {} and signers_one.signers(["d1"]) == {}
        assert await two.load("signers") == {}  # a replica starting now loads nothing of it
    finally:
        await client.aclose()
        await one.close()
        await two.close()


def test_a_gateway_on_sqlite_forgets_a_signer_after_the_configured_session_ttl(tmp_path: Path) -> None:
    """Through the real gateway, `sessions.ttl: 2s`: the signer is preferred while the entry lives (the row
    carries its expiry), forgotten after it, not loaded by the next start, and its row deleted."""
    model = SimModel("m1", reasoning_tokens=3, output_tokens=4)
    spec = FleetSpec(
        [SimProvider(p, kind="anthropic", models=[model], ttft=0.002, tps=5000.0) for p in ("a1", "a2")]
    )
    db = tmp_path / "state.db"
    with FleetThread(spec) as ft:
        cfg = base_config(ft, provider_order=["a2", "a1"], sticky=False)
        cfg["state"] = {"backend": "sqlite", "path": str(db)}
        cfg["sessions"] = {"ttl": "2s"}
        conversation = {"x-session-id": "conv-1"}
        with GatewayServer(cfg) as gw:
            client = anthropic.Anthropic(base_url=gw.url, api_key="k", max_retries=0)
            ask: dict[str, Any] = {
                "model": "m1",
                "max_tokens": 64,
                "thinking": {"type": "enabled", "budget_tokens": 64},
            }
            messages: list[dict[str, Any]] = [{"role": "user", "content": "first"}]
            first = client.messages.with_raw_response.create(
                **ask, messages=messages, extra_headers={"x-modelpool-route": "a1/m1", **conversation}
            )
            assert first.headers["x-modelpool-route"] == "a1/m1"
            messages += [
                {"role": "assistant", "content": [b.model_dump() for b in first.parse().content]},
                {"role": "user", "content": "second"},
            ]
            second = client.messages.with_raw_response.create(
                **ask, messages=messages, extra_headers=conversation
            )
            assert second.headers["x-modelpool-route"] == "a1/m1"  # the signer, ahead of the order
            # one entry: the sim signs the same reasoning text the same way on both turns
            assert gw.gateway.signers.of_session("conv-1") == {"a1/m1": 1}
            for _ in range(100):  # the background flush (bounded wait)
                if _signer_rows(db):
                    break
                time.sleep(0.05)
            rows = _signer_rows(db)
            assert len(rows) == 1 and rows[0][1] is not None and rows[0][1] - time.time() <= 2.0
            time.sleep(2.1)
            assert gw.gateway.signers.of_session("conv-1") == {}
            assert gw.gateway.signers.of_request(json.dumps({"messages": messages}).encode()) == ({}, None)
        with GatewayServer(cfg) as gw:
            assert len(gw.gateway.signers) == 0  # nothing expired is loaded
            for _ in range(100):  # the first background tick deletes the rows (bounded wait)
                if not _signer_rows(db):
                    break
                time.sleep(0.05)
            assert _signer_rows(db) == []
