"""Redis state backend (SPEC §9) against a real `redis-server`: sharing, atomic merges, outage, resync."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from modelpool.config.schema import PoolConfig, StateConfig
from modelpool.health.registry import HealthRegistry
from modelpool.routing.sticky import PinStore
from modelpool.state import create_backend
from modelpool.state.redis_backend import RedisBackend
from redis_server import RedisServer


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path / "redis").start()
    yield server
    server.stop()


class Replica:
    """A backend with the two registries the gateway wires to it (health and pins)."""

    def __init__(self, url: str, prefix: str = "t") -> None:
        self.backend = RedisBackend(url, prefix=prefix, persist_ttl=3600)
        self.health = HealthRegistry(
            PoolConfig, persist=lambda k, v: self.backend.put("health", k, v), forget=self._forget
        )
        self.pins = PinStore(
            persist=lambda k, v: self.backend.put("pins", k, v),
            forget=lambda k: self.backend.delete("pins", k),
        )
        self.seen: list[tuple[str, str, Any]] = []
        self.backend.set_listener(self._apply)

    def _forget(self, key: str) -> None:
        self.backend.delete("health", key)

    def _apply(self, ns: str, key: str, value: Any) -> None:
        self.seen.append((ns, key, value))
        if ns == "health":
            self.health.replace(key, value)
        elif ns == "pins":
            self.pins.apply(key, value)


@pytest.fixture
async def pair(redis_server: RedisServer) -> AsyncIterator[tuple[Replica, Replica]]:
    a, b = Replica(redis_server.url), Replica(redis_server.url)
    await a.backend.start()
    await b.backend.start()
    yield a, b
    await a.backend.close()
    await b.backend.close()


async def until(cond: Callable[[], bool], timeout: float = 5.0) -> None:
    """Wait for a condition (not a timing assertion: the bound only keeps a broken build from hanging)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.01)


async def test_factory_builds_redis_backend(tmp_path: Path) -> None:
    cfg = StateConfig(backend="redis", redis_url="redis://:hunter2@127.0.0.1:1/0", redis_prefix="x")
    backend = create_backend(cfg, tmp_path)
    assert isinstance(backend, RedisBackend) and backend.shared
    info = backend.describe()
    assert "hunter2" not in str(info) and info["prefix"] == "x" and info["healthy"] is False


async def test_a_pin_set_on_one_replica_reaches_the_other(pair: tuple[Replica, Replica]) -> None:
    a, b = pair
    a.pins.set("s1", "pool", "alpha/m1", lifetime=300)
    a.pins.set_operator("pool", "beta/m1")
    await until(lambda: b.pins.get("s1", "pool") is not None and b.pins.operator("pool") == "beta/m1")
    assert b.pins.get("s1", "pool").route == "alpha/m1"  # type: ignore[union-attr]
    assert await b.backend.load("pins") == await a.backend.load("pins")
    a.pins.drop("s1", "pool")
    await until(lambda: b.pins.get("s1", "pool") is None)
    # No echo of a replica's own write comes back to it.
    assert not [s for s in a.seen if s[0] == "pins"]


async def test_session_pins_expire_in_redis_with_their_cache_lifetime(
    pair: tuple[Replica, Replica], redis_server: RedisServer
) -> None:
    a, _ = pair
    a.pins.set("s1", "pool", "alpha/m1", lifetime=60)
    await a.backend.flush()
    client = aioredis.Redis.from_url(redis_server.url)
    try:
        ttl = await client.pttl("t:kv:pins:session:s1\x1fpool")
        assert 60_000 < ttl <= 66_000  # the lifetime plus a little slack for clock skew
        a.pins.set_operator("pool", "beta/m1")
        await a.backend.flush()
        assert await client.pttl("t:kv:pins:pool:pool") == -1  # an operator pin has no lifetime
    finally:
        await client.aclose()


async def test_concurrent_health_updates_on_two_replicas_lose_no_count(
    pair: tuple[Replica, Replica],
) -> None:
    a, b = pair

    async def traffic(r: Replica, n: int) -> None:
        for i in range(n):
            if i % 5 == 0:
                r.health.record_failure("alpha/m1", "server", "boom")
            else:
                r.health.record_success("alpha/m1")
            await asyncio.sleep(0)  # interleave with the other replica and the writers

    await asyncio.gather(traffic(a, 60), traffic(b, 40))

    def settled() -> bool:
        ra, rb = a.health.record("alpha/m1"), b.health.record("alpha/m1")
        return ra is not None and rb is not None and ra.attempts == rb.attempts == 100

    await until(settled)
    for r in (a, b):
        rec = r.health.record("alpha/m1")
        assert rec is not None and (rec.successes, rec.failures) == (80, 20)


async def test_a_quota_rest_is_shared_and_never_shortened(pair: tuple[Replica, Replica]) -> None:
    a, b = pair
    horizon = a.health.record_failure("alpha/m1", "quota", "insufficient balance")
    await until(lambda: b.health.is_resting("alpha/m1"))
    assert b.health.record("alpha/m1").rest_until == horizon  # type: ignore[union-attr]
    # A short rest found later on B keeps the longer quota rest (max, not last write).
    b.health.record_failure("alpha/m1", "network", "reset")
    await until(lambda: a.health.record("alpha/m1").consecutive == 2)  # type: ignore[union-attr]
    assert a.health.record("alpha/m1").rest_until == horizon  # type: ignore[union-attr]
    assert b.health.record("alpha/m1").rest_until == horizon  # type: ignore[union-attr]
    # A reset on one replica clears the route everywhere.
    b.health.reset("alpha/m1")
    await until(lambda: "alpha/m1" not in a.health)


async def test_shared_cursor_counts_every_step_of_every_replica(pair: tuple[Replica, Replica]) -> None:
    a, b = pair
    got: dict[str, int] = {}
    b.backend.set_listener(lambda ns, key, value: got.__setitem__(key, value))
    for step in range(1, 4):
        a.backend.bump("counters", "cursor:p", step)
    b.backend.bump("counters", "cursor:p", 1)
    await until(lambda: got.get("cursor:p") == 4)
    assert (await a.backend.load("counters")) == {"cursor:p": 4}


async def test_outage_keeps_writes_local_then_resyncs(tmp_path: Path) -> None:
    server = RedisServer(tmp_path / "redis")  # not started: Redis is down when the gateway starts
    a, b = Replica(server.url), Replica(server.url)
    await a.backend.start()
    assert not a.backend.healthy and "last_error" in a.backend.describe()
    a.health.record_failure("alpha/m1", "quota", "insufficient balance")
    a.pins.set("s1", "pool", "alpha/m1", lifetime=300)
    assert (await a.backend.load("pins")).keys() == {"session:s1\x1fpool"}  # read-your-writes
    server.start()
    try:
        # The breaker retries with backoff; once Redis answers, A pushes what it collected meanwhile.
        await until(lambda: a.backend.healthy and a.backend.describe()["pending_writes"] == 0, 15)
        await b.backend.start()
        assert (await b.backend.load("health"))["alpha/m1"]["last_error_kind"] == "quota"
        assert "session:s1\x1fpool" in await b.backend.load("pins")
    finally:
        await a.backend.close()
        await b.backend.close()
        server.stop()


async def test_redis_restart_without_data_is_restored_from_the_replicas(
    pair: tuple[Replica, Replica], redis_server: RedisServer
) -> None:
    a, b = pair
    a.health.record_failure("alpha/m1", "quota", "insufficient balance")
    b.pins.set("s1", "pool", "beta/m1", lifetime=300)
    b.backend.bump("counters", "cursor:p", 7)
    await until(lambda: b.health.is_resting("alpha/m1") and a.pins.get("s1", "pool") is not None)
    redis_server.kill()
    await until(lambda: not a.backend.healthy and not b.backend.healthy)
    # During the outage both keep serving from memory; A learns a new rest that B cannot hear of yet.
    a.health.record_failure("beta/m1", "auth", "invalid api key")
    assert a.backend.describe()["status"].startswith("degraded")
    redis_server.start()  # empty: no persistence
    await until(lambda: a.backend.healthy and b.backend.healthy, timeout=15)
    await until(lambda: b.health.is_resting("beta/m1"))
    fresh = Replica(redis_server.url)
    await fresh.backend.start()
    try:

        async def restored() -> bool:
            health = await fresh.backend.load("health")
            return (
                health.get("alpha/m1", {}).get("last_error_kind") == "quota"
                and "session:s1\x1fpool" in await fresh.backend.load("pins")
                and (await fresh.backend.load("counters")).get("cursor:p", 0) >= 7
            )

        for _ in range(500):
            if await restored():
                break
            await asyncio.sleep(0.01)
        assert await restored()
    finally:
        await fresh.backend.close()


async def test_close_flushes_pending_writes(redis_server: RedisServer) -> None:
    a = Replica(redis_server.url)
    await a.backend.start()
    a.backend.put("dashboard", "pool.strategy", "round-robin")
    await a.backend.close()
    b = Replica(redis_server.url)
    await b.backend.start()
    try:
        assert await b.backend.load("dashboard") == {"pool.strategy": "round-robin"}
    finally:
        await b.backend.close()


async def test_a_replica_that_loads_the_shared_record_then_counts_adds_only_its_own_calls(
    pair: tuple[Replica, Replica], redis_server: RedisServer
) -> None:
    a, _ = pair
    for _ in range(10):
        a.health.record_success("alpha/m1")
    await a.backend.flush()
    late = Replica(redis_server.url)  # a replica started after the traffic, loading as the gateway does
    await late.backend.start()
    try:
        late.health.load(await late.backend.load("health"), persist_ttl=3600)
        assert late.health.record("alpha/m1").attempts == 10  # type: ignore[union-attr]
        late.health.record_success("alpha/m1")
        await until(lambda: a.health.record("alpha/m1").attempts == 11)  # type: ignore[union-attr]
        await late.backend.flush()
        assert (await a.backend.load("health"))["alpha/m1"]["attempts"] == 11  # not 21
    finally:
        await late.backend.close()
