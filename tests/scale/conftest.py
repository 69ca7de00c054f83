"""Fixtures for the scale-out tests: a real redis-server, the sim fleet and replica processes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from modelpool.sim import FleetThread
from redis_server import RedisServer
from replicas import Replica, replica_config, three_route_spec


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path / "redis").start()
    yield server
    server.stop()


@pytest.fixture
def fleet3() -> Iterator[FleetThread]:
    with FleetThread(three_route_spec()) as ft:
        yield ft


@pytest.fixture
def replicas(
    tmp_path: Path, fleet3: FleetThread, redis_server: RedisServer
) -> Iterator[Callable[..., tuple[Replica, Replica]]]:
    """`replicas(**pool)` starts replicas A and B of one config (pool settings given) on one Redis."""
    started: list[Replica] = []

    def start(**pool: Any) -> tuple[Replica, Replica]:
        cfg = replica_config(fleet3, redis_server.url, **pool)
        a = Replica("a", cfg, tmp_path)
        b = Replica("b", cfg, tmp_path)
        started.extend([a, b])
        a.start()
        b.start()
        return a, b

    yield start
    for replica in started:
        replica.stop()
