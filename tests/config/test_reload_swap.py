"""A config reload through the real file watcher and the engine (issue #29: the build is paced off the
loop and the new runtime frozen out of the collector's reach): calls see the old runtime or the new one,
never a mix; an invalid edit keeps the old one; a replaced runtime is freed by reference counting alone.

In-process (the properties are of the engine's snapshots, not of HTTP); bounded waits, no timing
assertions.
"""

from __future__ import annotations

import asyncio
import gc
import os
import weakref
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelpool import offloop
from modelpool.config import load_config
from modelpool.gateway import Gateway
from modelpool.runtime import Runtime

WAIT = 15.0  # only bounds a hang
BODY = {"model": "m-000", "messages": [{"role": "user", "content": "hello"}]}


def config(providers: int, models: int = 50, strategy: str = "fastest") -> dict[str, Any]:
    return {
        "providers": [
            {
                "id": f"p{i:02d}",
                "base_url": f"http://127.0.0.1:9/p{i:02d}/v1",  # never called
                "models": [f"m-{j:03d}" for j in range(models)],
            }
            for i in range(providers)
        ],
        "pool": {"strategy": strategy},
        "state": {"backend": "memory"},
        "holidays": {"sync": False},
    }


def write(path: Path, cfg: dict[str, Any] | str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(cfg if isinstance(cfg, str) else yaml.safe_dump(cfg), encoding="utf-8")
    os.replace(tmp, path)  # as editors save


def consistent(rt: Runtime) -> bool:
    """The catalog was built from this runtime's own config: every provider, every route, no other."""
    providers = {p.id: p for p in rt.config.providers}
    routes = {f"{p.id}/{m}" for p in rt.config.providers for m in p.models or ()}
    return (
        rt.catalog.providers.keys() == providers.keys()
        and all(rt.catalog.providers[pid] is p for pid, p in providers.items())
        and rt.catalog.routes.keys() == routes
        and all(len(pool.routes) == len(providers) for pool in rt.catalog.pools.values())
    )


async def until(predicate: Any) -> None:
    async with asyncio.timeout(WAIT):
        while not predicate():
            await asyncio.sleep(0.01)


async def test_a_reload_swaps_the_whole_runtime_at_once(tmp_path: Path) -> None:
    path = tmp_path / "modelpool.yaml"
    write(path, config(20))  # 1,000 routes: a build of many turns
    gw = Gateway(load_config(path, env={}), env={})
    seen: list[Runtime] = []
    stop = asyncio.Event()

    async def reader() -> None:  # a call's view: whatever `gw.runtime` is at each turn of the loop
        while not stop.is_set():
            rt = gw.runtime
            if not seen or seen[-1] is not rt:
                seen.append(rt)
            assert consistent(rt)
            await asyncio.sleep(0)

    await gw.start(watch=True)
    try:
        task = asyncio.create_task(reader())
        first = gw.runtime
        write(path, config(21))
        await until(lambda: len(gw.runtime.config.providers) == 21)
        stop.set()
        await task
    finally:
        await gw.close()
    assert seen[0] is first and seen[-1] is gw.runtime
    assert [len(rt.config.providers) for rt in seen] == [20, 21]  # old, then new: nothing in between
    assert all(consistent(rt) for rt in seen)


async def test_an_invalid_edit_keeps_the_old_runtime(tmp_path: Path) -> None:
    path = tmp_path / "modelpool.yaml"
    write(path, config(3))
    gw = Gateway(load_config(path, env={}), env={})
    await gw.start(watch=True)
    try:
        before = gw.runtime
        write(path, config(4, strategy="fastest-ever"))  # a schema error
        await until(lambda: gw._watcher.last_error is not None)
        assert gw.runtime is before and len(gw.runtime.config.providers) == 3
        assert "pool.strategy" in str(gw._watcher.last_error)
        schema_error = gw._watcher.last_error
        write(path, "providers: [unclosed\n")  # a YAML error
        await until(lambda: gw._watcher.last_error is not schema_error)
        assert gw.runtime is before
        write(path, config(4))  # a valid edit afterwards applies
        await until(lambda: len(gw.runtime.config.providers) == 4)
        assert consistent(gw.runtime) and gw._watcher.last_error is None
    finally:
        await gw.close()


class _Sentinel:
    """Weakly referenceable, put in a runtime's memo: it dies when the runtime does."""


def _exercise(gw: Gateway) -> None:
    """Fill the runtime's memo the way calls do: plans, per-route tables, prices, the key ring."""
    for _ in range(2):
        call = gw.prepare("openai", BODY, {})
        gw.planner.plan(gw.runtime, call, 0.0)
    rt = gw.runtime
    key = next(iter(rt.catalog.routes))
    rt.route_weights()[key], rt.route_costs(False)[key], rt.route_costs(True)[key]
    rt.route_timeouts()[key]
    rt.prices().pricing(key)
    gw.accounts.keyring()


async def test_a_replaced_runtime_is_freed_by_reference_counting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As `modelpool serve` runs: the heap frozen after start and after each swap, so only reference
    counting can free an old runtime; a reference cycle through it would leak one per reload."""
    path = tmp_path / "modelpool.yaml"
    write(path, config(3))
    gw = Gateway(load_config(path, env={}), env={})
    gw.settle_heap = True
    monkeypatch.setattr(offloop, "_settled", False)  # put back after the test (settle_heap sets it)
    await gw.start(watch=True)
    try:
        _exercise(gw)
        sentinel = _Sentinel()
        gw.runtime.memo["sentinel"] = sentinel
        gone = weakref.ref(sentinel)
        del sentinel
        gc.disable()  # nothing but reference counting from here on
        write(path, config(4))
        await until(lambda: len(gw.runtime.config.providers) == 4)
        _exercise(gw)
        assert gone() is None
    finally:
        gc.enable()
        await gw.close()
        gc.unfreeze()  # the test process must not keep its heap frozen for the tests after this one
