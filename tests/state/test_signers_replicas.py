"""The signer book is shared across replicas (SPEC §3.10, §9): a conversation whose reasoning one replica
relayed from a route goes back to that route when its next turn lands on another replica — two real
`modelpool serve` processes over a real redis-server. Each entry lives in Redis as long as a session
(`sessions.ttl`, a TTL on its key) and names its session, which the other replica's session page shows."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest
import redis

from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider
from modelpool.sim.provenance import sealed_by
from redis_server import RedisServer
from replicas import Replica, replica_config


@pytest.fixture
def fleet() -> Iterator[FleetThread]:
    model = SimModel("m1", reasoning_tokens=3, output_tokens=4)
    spec = FleetSpec(
        [SimProvider(p, kind="anthropic", models=[model], ttft=0.002, tps=5000.0) for p in ("a1", "a2")]
    )
    with FleetThread(spec) as ft:
        yield ft


def test_a_signature_relayed_by_one_replica_is_known_to_the_other(fleet: FleetThread, tmp_path: Path) -> None:
    server = RedisServer(tmp_path / "redis").start()
    cfg = replica_config(fleet, server.url, provider_order=["a2", "a1"], sticky=False)
    cfg["sessions"] = {"ttl": "1h"}
    conversation = {"x-session-id": "conv-1"}
    one = Replica("one", cfg, tmp_path).start()
    two = Replica("two", cfg, tmp_path).start()
    try:
        ask: dict[str, Any] = {
            "model": "m1",
            "max_tokens": 64,
            "thinking": {"type": "enabled", "budget_tokens": 64},
        }
        messages: list[dict[str, Any]] = [{"role": "user", "content": "first"}]
        first = anthropic.Anthropic(
            base_url=one.url, api_key="k", max_retries=0
        ).messages.with_raw_response.create(
            **ask, messages=messages, extra_headers={"x-modelpool-route": "a1/m1", **conversation}
        )
        assert first.headers["x-modelpool-route"] == "a1/m1"
        messages += [
            {"role": "assistant", "content": [b.model_dump() for b in first.parse().content]},
            {"role": "user", "content": "second"},
        ]
        store = redis.Redis.from_url(server.url)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not store.keys("scale:kv:signers:*"):
            time.sleep(0.1)
        keys = store.keys("scale:kv:signers:*")
        assert keys, "the signer entry reached redis"
        for key in keys:
            assert 0 < store.pttl(key) <= 3600_000  # it lives as long as a session, no longer
            entry = json.loads(store.get(key) or b"{}")
            assert entry["route"] == "a1/m1" and entry["session"] == "conv-1"
        time.sleep(0.5)  # the change feed reaches the other replica
        assert two.admin("GET", "/admin/sessions/conv-1")["signers"] == {"a1/m1": len(keys)}
        second = anthropic.Anthropic(
            base_url=two.url, api_key="k", max_retries=0
        ).messages.with_raw_response.create(**ask, messages=messages, extra_headers=conversation)
        assert second.headers["x-modelpool-route"] == "a1/m1"  # the signer, ahead of the priority order
        sent = fleet.calls("a1")[-1].body or {}
        signatures = [
            b["signature"]
            for m in sent["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "thinking"
        ]
        assert signatures and {sealed_by(s) for s in signatures} == {"a1"}  # kept as they were
        assert fleet.calls("a2") == []
    finally:
        one.stop()
        two.stop()
        server.stop()
