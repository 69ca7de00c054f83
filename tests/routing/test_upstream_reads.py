"""The stall watchdog of stream reads (`walk.streaming.UpstreamReads`): one timer per quiet period, a
stall becomes a `network` failure, a real cancellation stays a cancellation. End to end the stalls and
the slow trickle are covered by tests/faults/test_scenarios.py; this pins the timer logic itself."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from modelpool.health.classify import FailureKind
from modelpool.relays.reads import UpstreamReads
from modelpool.upstream.client import AttemptFailure


class QueueReader:
    """Stands in for aiohttp's StreamReader: `readany` returns what the test feeds."""

    def __init__(self) -> None:
        self.chunks: asyncio.Queue[bytes] = asyncio.Queue()

    async def readany(self) -> bytes:
        return await self.chunks.get()


def reads_for(reader: QueueReader, first_byte: float, idle: float) -> UpstreamReads:
    loop = asyncio.get_running_loop()
    return UpstreamReads(reader, loop.time() + first_byte, idle)  # type: ignore[arg-type]


async def feed_every(reader: QueueReader, interval: float, count: int) -> None:
    for i in range(count):
        await asyncio.sleep(interval)
        reader.chunks.put_nowait(b"x%d" % i)


async def test_no_first_event_by_the_deadline_is_a_network_stall() -> None:
    reads = reads_for(QueueReader(), first_byte=0.05, idle=10)
    with pytest.raises(AttemptFailure) as err:
        await reads.read(before_first=True)
    assert err.value.kind is FailureKind.NETWORK
    assert "first-byte" in str(err.value)
    reads.close()


async def test_a_trickle_slower_in_total_but_faster_than_idle_per_read_is_never_cut() -> None:
    reader = QueueReader()
    reads = reads_for(reader, first_byte=1, idle=0.15)
    feeder = asyncio.create_task(feed_every(reader, 0.05, 12))  # 0.6 s in total, 4 × the idle timeout
    got = [await reads.read(before_first=i == 0) for i in range(12)]
    reads.close()
    await feeder
    assert got == [b"x%d" % i for i in range(12)]


async def test_time_spent_away_from_the_read_does_not_count_as_idle() -> None:
    """A slow client (the relay busy writing) must not make a flowing upstream look idle."""
    reader = QueueReader()
    reads = reads_for(reader, first_byte=1, idle=0.1)
    reader.chunks.put_nowait(b"a")
    assert await reads.read(before_first=True) == b"a"
    await asyncio.sleep(0.3)  # busy elsewhere for 3 × idle; the watchdog fires meanwhile and stands down
    reader.chunks.put_nowait(b"b")
    assert await reads.read(before_first=False) == b"b"
    with pytest.raises(AttemptFailure) as err:
        await reads.read(before_first=False)  # now nothing comes: a stall after `idle`
    assert "no upstream data for 0.1 s" in str(err.value)
    reads.close()


async def test_an_outside_cancellation_stays_a_cancellation() -> None:
    reads = reads_for(QueueReader(), first_byte=10, idle=10)
    task: asyncio.Task[Any] = asyncio.create_task(reads.read(before_first=True))
    await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    reads.close()


async def test_closing_stops_the_watchdog() -> None:
    reader = QueueReader()
    reads = reads_for(reader, first_byte=0.05, idle=0.05)
    reader.chunks.put_nowait(b"a")
    assert await reads.read(before_first=True) == b"a"
    reads.close()
    assert reads._handle is None


async def test_after_the_first_event_a_stall_is_caught_at_idle_not_at_the_first_byte_deadline() -> None:
    reader = QueueReader()
    reads = reads_for(reader, first_byte=30, idle=0.1)
    reader.chunks.put_nowait(b"a")
    assert await reads.read(before_first=True) == b"a"
    # Bounded by the test timeout: were the 30 s first-byte watchdog left armed, this would wait 30 s.
    with pytest.raises(AttemptFailure) as err:
        await asyncio.wait_for(reads.read(before_first=False), timeout=5)
    assert "no upstream data for 0.1 s" in str(err.value)
    reads.close()
