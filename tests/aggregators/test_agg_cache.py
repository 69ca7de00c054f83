"""StatsCache: the request path never waits, stale stats are served during one shared refresh, back-off."""

from __future__ import annotations

import asyncio

import pytest
from agg_fixtures import FakeClock

from modelpool.aggregators import EndpointStats, ModelStats, StatsCache, StatsUnavailable

MODEL = "deepseek/deepseek-v4.1-flash-1017"


def stats(tps: float, model: str = MODEL) -> ModelStats:
    ep = EndpointStats("p", "p", tps, None, 100.0, True, False, True, None)
    return ModelStats(model=model, kind="vercel", endpoints=(ep,))


async def settle() -> None:
    """Let background tasks run until they block (no wall-clock waiting)."""
    for _ in range(10):
        await asyncio.sleep(0)


class Gate:
    """A fetch that counts its calls and returns only when the test opens the gate."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.open = asyncio.Event()
        self.results: list[ModelStats | Exception] = []

    async def __call__(self, model: str) -> ModelStats:
        self.calls.append(model)
        await self.open.wait()
        result = self.results.pop(0) if self.results else stats(1)
        if isinstance(result, Exception):
            raise result
        return result


async def test_cold_miss_returns_none_at_once_while_the_fetch_hangs(clock: FakeClock) -> None:
    gate = Gate()  # never opened: the aggregator hangs
    cache = StatsCache(gate, ttl=900, clock=clock)
    # get() is a plain function: it cannot await, so it cannot wait on the hanging fetch.
    assert not asyncio.iscoroutinefunction(cache.get)
    assert cache.get(MODEL) is None
    await settle()
    assert gate.calls == [MODEL]  # the background fetch started …
    assert cache.refreshing(MODEL)  # … and is still hanging
    for _ in range(20):
        assert cache.get(MODEL) is None  # every call still answers at once, no second fetch
    await settle()
    assert gate.calls == [MODEL]
    await cache.close()
    assert not cache.refreshing(MODEL)


def test_get_outside_an_event_loop_serves_the_cache_only(clock: FakeClock) -> None:
    gate = Gate()
    cache = StatsCache(gate, ttl=900, clock=clock)
    assert cache.get(MODEL) is None
    assert gate.calls == []


async def test_stale_stats_are_served_while_exactly_one_refresh_runs(clock: FakeClock) -> None:
    gate = Gate()
    gate.results = [stats(100), stats(200)]
    gate.open.set()
    cache = StatsCache(gate, ttl=900, clock=clock)
    first = await cache.get_or_fetch(MODEL, timeout=5)
    assert first is not None and first.endpoints[0].tps_p50 == 100
    assert cache.age(MODEL) == 0

    clock.advance(901)  # stale
    gate.open.clear()  # the refresh will hang until we open the gate

    async def reader() -> ModelStats | None:
        return cache.get(MODEL)

    seen = await asyncio.gather(*(reader() for _ in range(50)))
    await settle()
    seen += [cache.get(MODEL) for _ in range(50)]
    assert all(s is first for s in seen)  # the stale stats, every time
    assert len(gate.calls) == 2  # the first fetch + exactly one refresh
    assert cache.refreshing(MODEL)

    gate.open.set()
    await settle()
    fresh = cache.get(MODEL)
    assert fresh is not None and fresh.endpoints[0].tps_p50 == 200
    assert len(gate.calls) == 2 and cache.age(MODEL) == 0


async def test_concurrent_get_or_fetch_share_one_fetch(clock: FakeClock) -> None:
    gate = Gate()
    cache = StatsCache(gate, ttl=900, clock=clock)
    waiters = [asyncio.ensure_future(cache.get_or_fetch(MODEL, timeout=5)) for _ in range(10)]
    await settle()
    assert len(gate.calls) == 1
    gate.open.set()
    results = await asyncio.gather(*waiters)
    assert len({id(r) for r in results}) == 1 and results[0] is not None


async def test_a_waiter_that_gives_up_does_not_cancel_the_shared_fetch(clock: FakeClock) -> None:
    gate = Gate()
    cache = StatsCache(gate, ttl=900, clock=clock)
    assert await cache.get_or_fetch(MODEL, timeout=0) is None
    assert cache.refreshing(MODEL)
    gate.open.set()
    await settle()
    assert cache.get(MODEL) is not None and len(gate.calls) == 1


async def test_back_off_after_failures_doubles_to_a_cap(clock: FakeClock) -> None:
    calls: list[float] = []

    async def failing(model: str) -> ModelStats:
        calls.append(clock())
        raise StatsUnavailable("HTTP 503 from the aggregator")

    cache = StatsCache(failing, ttl=900, clock=clock, backoff=30, max_backoff=100)
    assert cache.get(MODEL) is None
    await settle()
    assert len(calls) == 1 and cache.failures == 1
    assert cache.last_error(MODEL) == "HTTP 503 from the aggregator"

    for expected in (30, 60, 100, 100):  # 30 → 60 → 120 capped at 100
        clock.advance(expected - 1)
        cache.get(MODEL)
        await settle()
        before = len(calls)
        clock.advance(1)
        cache.get(MODEL)
        await settle()
        assert len(calls) == before + 1
    assert cache.failures == 5
    assert cache.status()[MODEL]["failures"] == 5


async def test_failure_keeps_serving_the_last_good_stats(clock: FakeClock) -> None:
    results: list[ModelStats | Exception] = [stats(100), StatsUnavailable("down"), stats(300)]

    async def fetch(model: str) -> ModelStats:
        r = results.pop(0)
        if isinstance(r, Exception):
            raise r
        return r

    cache = StatsCache(fetch, ttl=60, clock=clock, backoff=30)
    good = await cache.get_or_fetch(MODEL)
    clock.advance(61)
    assert cache.get(MODEL) is good
    await settle()
    assert cache.get(MODEL) is good  # refresh failed: still the last good stats, no new fetch yet
    assert cache.status()[MODEL]["retry_in_s"] == 30
    clock.advance(30)
    cache.get(MODEL)
    await settle()
    after = cache.get(MODEL)
    assert after is not None and after.endpoints[0].tps_p50 == 300
    assert cache.status()[MODEL]["failures"] == 0


async def test_get_or_fetch_respects_back_off_until_drop(clock: FakeClock) -> None:
    calls = 0

    async def failing(model: str) -> ModelStats:
        nonlocal calls
        calls += 1
        raise StatsUnavailable("down")

    cache = StatsCache(failing, ttl=60, clock=clock)
    assert await cache.get_or_fetch(MODEL) is None
    assert await cache.get_or_fetch(MODEL) is None
    assert calls == 1  # a polling dashboard does not hammer a dead aggregator
    cache.drop(MODEL)  # `modelpool rank --refresh`
    assert await cache.get_or_fetch(MODEL) is None
    assert calls == 2


async def test_drop_forgets_and_refetches(clock: FakeClock) -> None:
    n = 0

    async def fetch(model: str) -> ModelStats:
        nonlocal n
        n += 1
        return stats(n, model)

    cache = StatsCache(fetch, ttl=900, clock=clock)
    await cache.get_or_fetch("a/one")
    await cache.get_or_fetch("a/two")
    cache.drop("a/one")
    assert cache.age("a/one") is None and cache.age("a/two") == 0
    assert cache.get("a/one") is None  # cold again: the request path does not wait
    await settle()
    assert n == 3
    cache.drop()
    assert cache.peek("a/one") is None and cache.peek("a/two") is None


async def test_a_hanging_custom_fetch_is_bounded(clock: FakeClock) -> None:
    gate = Gate()
    cache = StatsCache(gate, ttl=900, clock=clock, fetch_timeout=0.01)
    assert await cache.get_or_fetch(MODEL, timeout=5) is None
    assert cache.failures == 1 and cache.last_error(MODEL) == "TimeoutError"


@pytest.mark.parametrize("ttl", [lambda: 10.0, 10.0])
async def test_ttl_may_be_live(clock: FakeClock, ttl: object) -> None:
    async def fetch(model: str) -> ModelStats:
        return stats(1)

    cache = StatsCache(fetch, ttl=ttl, clock=clock)  # type: ignore[arg-type]
    await cache.get_or_fetch(MODEL)
    clock.advance(9)
    assert cache.status()[MODEL]["fresh"]
    clock.advance(2)
    assert not cache.status()[MODEL]["fresh"]


def test_a_fetch_orphaned_by_a_finished_loop_does_not_block_refreshes(clock: FakeClock) -> None:
    gate_calls: list[str] = []

    async def hang(model: str) -> ModelStats:
        gate_calls.append(model)
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    cache = StatsCache(hang, ttl=900, clock=clock)

    async def touch() -> None:
        cache.get(MODEL)
        await settle()

    loop = asyncio.new_event_loop()
    loop.run_until_complete(touch())
    loop.close()  # leaves the first fetch pending forever
    loop2 = asyncio.new_event_loop()
    loop2.run_until_complete(touch())
    assert gate_calls == [MODEL, MODEL]
    loop2.run_until_complete(cache.close())
    loop2.close()
