"""Groups and live config edits through the real server (issue: gateway core)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import openai
import pytest
import yaml

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider, expected_text


@pytest.fixture
def named_fleet() -> Iterator[FleetThread]:
    """The same model under two provider-specific ids, as in the seed's merged-groups example."""
    spec = FleetSpec(
        [
            SimProvider(
                "deepseek", models=[SimModel("deepseek-flash", output_tokens=4)], ttft=0.005, tps=5000.0
            ),
            SimProvider(
                "workbuddy",
                models=[SimModel("deepseek-v4.1-flash-1017", output_tokens=4)],
                ttft=0.005,
                tps=5000.0,
            ),
        ]
    )
    with FleetThread(spec) as ft:
        yield ft


def write(path: Path, cfg: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump(cfg, allow_unicode=True))
    tmp.replace(path)  # editors save atomically; the watcher must see it


def pools(gw: GatewayServer) -> dict[str, list[str]]:
    data = httpx.get(gw.url + "/v1/models", timeout=5).json()["data"]
    return {p["id"]: p["routes"] for p in data}


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.05)


def config(ft: FleetThread, groups: list[dict] | None = None) -> dict:
    cfg = ft.to_config(state={"backend": "memory"}, server={"admin_token": ADMIN_TOKEN})
    cfg["pool"] = {"strategy": "priority"}
    cfg["holidays"] = {"source": "bundled"}
    if groups is not None:
        cfg["pool"]["groups"] = groups
    return cfg


def test_default_group_merges_both_ids_into_one_pool(named_fleet: FleetThread, tmp_path: Path) -> None:
    path = tmp_path / "modelpool.yaml"
    write(path, config(named_fleet))
    with GatewayServer(path) as gw:
        assert pools(gw) == {
            "deepseek-v4.1-flash": ["deepseek/deepseek-flash", "workbuddy/deepseek-v4.1-flash-1017"]
        }
        c = openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0)
        reply = c.chat.completions.create(
            model="deepseek-v4.1-flash", messages=[{"role": "user", "content": "hi"}]
        )
        assert reply.choices[0].message.content == expected_text("deepseek", "deepseek-flash", 4)
        # the upstream got its own id, not the pool id
        assert named_fleet.calls("deepseek")[-1].body["model"] == "deepseek-flash"


def test_groups_merge_and_unmerge_live(named_fleet: FleetThread, tmp_path: Path) -> None:
    path = tmp_path / "modelpool.yaml"
    write(path, config(named_fleet, groups=[]))
    with GatewayServer(path) as gw:
        assert set(pools(gw)) == {"deepseek-flash", "deepseek-v4.1-flash-1017"}
        merged = [
            {
                "id": "flash",
                "name": "Flash",
                "models": ["deepseek-flash", "deepseek-v4.1-flash*"],
                "merge": True,
            }
        ]
        write(path, config(named_fleet, groups=merged))
        wait_for(lambda: set(pools(gw)) == {"flash"})
        curated = [{"id": "flash", "models": ["deepseek-flash", "deepseek-v4.1-flash*"], "merge": False}]
        write(path, config(named_fleet, groups=curated))
        wait_for(lambda: set(pools(gw)) == {"flash", "deepseek-flash", "deepseek-v4.1-flash-1017"})
        assert pools(gw)["flash"] == ["deepseek/deepseek-flash", "workbuddy/deepseek-v4.1-flash-1017"]


def test_invalid_edit_is_rejected_and_the_old_config_keeps_serving(
    named_fleet: FleetThread, tmp_path: Path
) -> None:
    path = tmp_path / "modelpool.yaml"
    write(path, config(named_fleet))
    with GatewayServer(path) as gw:
        c = openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0)
        bad = config(named_fleet)
        bad["pool"]["strategy"] = "fastest-ever"
        bad["providers"][0]["base_url"] = "not a url"
        write(path, bad)
        status = lambda: httpx.get(gw.url + "/admin/status", headers=gw.admin_headers(), timeout=5).json()  # noqa: E731
        wait_for(lambda: status()["config_error"] is not None)
        errors = status()["config_error"]
        assert any(e.startswith("pool.strategy") for e in errors)
        assert any(e.startswith("providers[0].base_url") for e in errors)
        reply = c.chat.completions.with_raw_response.create(
            model="deepseek-v4.1-flash", messages=[{"role": "user", "content": "hi"}]
        )
        assert reply.headers["x-modelpool-route"] == "deepseek/deepseek-flash"
        # a valid edit afterwards applies and clears the error
        good = config(named_fleet)
        good["pool"]["provider_order"] = ["workbuddy"]
        write(path, good)
        wait_for(lambda: status()["config_error"] is None)
        # a new conversation (the first one is sticky to its route) follows the new order
        reply = c.chat.completions.with_raw_response.create(
            model="deepseek-v4.1-flash",
            messages=[{"role": "user", "content": "hi"}],
            extra_headers={"x-session-id": "a-new-conversation"},
        )
        assert reply.headers["x-modelpool-route"] == "workbuddy/deepseek-v4.1-flash-1017"
