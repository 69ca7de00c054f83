"""Issue #21: a 10,000-route catalog (sim preset `scale`: 50 providers × 200 models) through the real
server — it loads, serves a call, lists every model, and a changed file reloads live. No timing here:
bench/scale.py measures how fast."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import yaml

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import FleetThread
from modelpool.sim.scale import LARGEST_POOL, SMALL_POOL, scale_fleet

_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


@pytest.fixture(scope="module")
def fleet() -> Iterator[FleetThread]:
    with FleetThread(scale_fleet()) as ft:
        yield ft


def write(path: Path, config: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")  # a complete file appears at once, as an editor saves
    tmp.write_text(yaml.dump(config, Dumper=_Dumper, sort_keys=False))
    os.replace(tmp, path)


def base(fleet: FleetThread) -> dict[str, Any]:
    return fleet.to_config(
        state={"backend": "memory"},
        server={"admin_token": ADMIN_TOKEN},
        holidays={"source": "bundled"},
    )


def models(gw: GatewayServer) -> dict[str, list[str]]:
    body = httpx.get(f"{gw.url}/v1/models", timeout=30).json()
    return {m["id"]: m["routes"] for m in body["data"]}


def wait_for(check: Any, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def test_the_scale_config_loads_serves_and_lists_every_model(fleet: FleetThread, tmp_path: Path) -> None:
    path = tmp_path / "modelpool.yaml"
    write(path, base(fleet))
    with GatewayServer(path) as gw:
        listed = models(gw)
        assert len(listed) == 400
        assert sum(len(r) for r in listed.values()) == 10_000
        assert len(listed[SMALL_POOL]) == 3 and len(listed[LARGEST_POOL]) == 30
        assert max(len(r) for r in listed.values()) == 30
        # Vendor-prefixed ids (`lab/scale-…`) joined their natural pool.
        assert any("/lab/" in key for key in listed[LARGEST_POOL])

        client = openai.OpenAI(base_url=f"{gw.url}/v1", api_key="x", max_retries=0, timeout=30)
        raw = client.chat.completions.with_raw_response.create(
            model=LARGEST_POOL, messages=[{"role": "user", "content": "hello"}]
        )
        route = raw.headers["x-modelpool-route"]
        assert route in listed[LARGEST_POOL]
        provider = route.split("/", 1)[0]
        assert [c.model for c in fleet.calls(provider)][-1] == route.split("/", 1)[1]
        assert raw.parse().choices[0].message.content


def test_a_changed_scale_config_reloads_live(fleet: FleetThread, tmp_path: Path) -> None:
    path = tmp_path / "modelpool.yaml"
    config = base(fleet)
    write(path, config)
    with GatewayServer(path) as gw:
        assert "scale-new" not in models(gw)
        first = config["providers"][0]
        changed = dict(first, models=[*first["models"], "scale-new"])
        # One model added to one provider, the 3-route pool's model removed from every provider.
        providers = [changed, *config["providers"][1:]]
        providers = [dict(p, models=[m for m in p["models"] if m != SMALL_POOL]) for p in providers]
        write(path, {**config, "providers": providers})
        wait_for(lambda: "scale-new" in models(gw), "the added model in /v1/models")
        listed = models(gw)
        assert listed["scale-new"] == [f"{first['id']}/scale-new"]
        assert SMALL_POOL not in listed
        assert sum(len(r) for r in listed.values()) == 10_000 + 1 - 3
        assert gw.gateway.config_error is None
        # A call to a pool the reload removed is a clear 404 naming the closest pools.
        reply = httpx.post(
            f"{gw.url}/v1/chat/completions",
            json={"model": SMALL_POOL, "messages": [{"role": "user", "content": "hi"}]},
            timeout=30,
        )
        assert reply.status_code == 404 and SMALL_POOL in reply.json()["error"]["message"]
