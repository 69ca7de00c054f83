"""The roster and the Settings editors through the admin API (no browser): `/admin/models` with the
rotator seed's four precedence rules, `/admin/providers` (arrow editors) and `/admin/groups`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from dash_helpers import admin, dashboard_config, dashboard_spec, in_force, served_route

from gateway_server import GatewayServer
from modelpool.sim import FleetThread


@pytest.fixture(scope="module")
def fleet_d() -> Iterator[FleetThread]:
    with FleetThread(dashboard_spec()) as ft:
        yield ft


def switch(gw: GatewayServer, key: str, enabled: bool, scope: str = "model") -> dict[str, Any]:
    return dict(admin(gw, "/admin/models", {"key": key, "enabled": enabled, "scope": scope}))


def switch_error(gw: GatewayServer, key: str, enabled: bool, scope: str = "model") -> str:
    body = {"key": key, "enabled": enabled, "scope": scope}
    response = httpx.post(gw.url + "/admin/models", json=body, headers=gw.admin_headers(), timeout=10)
    assert response.status_code == 400, response.text
    return str(response.json()["error"]["message"])


def row(roster: dict[str, Any], key: str) -> dict[str, Any]:
    (found,) = [r for r in roster["models"] if r["key"] == key]
    return dict(found)


def channel(roster: dict[str, Any], pid: str) -> dict[str, Any]:
    (found,) = [c for c in roster["channels"] if c["id"] == pid]
    return dict(found)


def lists(roster: dict[str, Any]) -> dict[str, list[str]]:
    return {k.split(".")[1]: v["value"] for k, v in roster["lists"].items()}


def test_roster_shape_sections_labels_and_derived_tallies(fleet_d: FleetThread) -> None:
    with GatewayServer(dashboard_config(fleet_d)) as gw:
        served_route(gw, "warm")  # alpha/m1 becomes ok, the others stay untested
        roster = admin(gw, "/admin/models")
        chat, vision = roster["groups"]
        assert (chat["id"], vision["id"]) == ("chat", "vision")
        assert chat["channels"] == ["alpha", "beta", "agg"] and vision["channels"] == ["alpha-vision"]
        assert channel(roster, "beta")["label"] == "硅基流动 (beta)"
        twin = channel(roster, "alpha-vision")
        assert twin["kind"] == "vision" and twin["sourceChannel"] == "alpha" and twin["switchable"] is False
        assert channel(roster, "agg")["provider_kind"] == "vercel"
        assert row(roster, "alpha/m1")["state"] == "ok" and row(roster, "beta/m1")["state"] == "untested"
        assert (row(roster, "alpha-vision/m1")["state"], row(roster, "alpha-vision/m1")["reason"]) == (
            "off",
            "vision",
        )
        # every counter is derived from the rows: sections add up, and ok + resting + off == models
        for entry in [*roster["groups"], *roster["channels"], roster["totals"]]:
            assert entry["ok"] + entry["resting"] + entry["off"] == entry["models"]
        assert (chat["models"], chat["ok"], chat["off"]) == (3, 3, 0)
        assert (vision["models"], vision["off"]) == (1, 1)
        assert roster["totals"]["models"] == len(roster["models"]) == 4


def test_four_precedence_rules(fleet_d: FleetThread) -> None:
    with GatewayServer(dashboard_config(fleet_d)) as gw:
        # rule 1: a channel whose only row is off for a per-row reason is still open
        roster = switch(gw, "alpha/m1", False)
        assert row(roster, "alpha/m1")["reason"] == "manual" and channel(roster, "alpha")["closed"] is False
        roster = switch(gw, "alpha/m1", True)
        assert lists(roster)["disabled"] == [] and lists(roster)["enabled"] == []  # no redundant entry
        # closing the channel writes one disabled_providers entry; the row goes out of rotation
        roster = switch(gw, "alpha", False, "provider")
        assert lists(roster)["disabled_providers"] == ["alpha"] and channel(roster, "alpha")["closed"]
        assert row(roster, "alpha/m1")["state"] == "off" and served_route(gw, "s1") == "beta/m1"
        # rule 2 (+4): a row switched on after the channel closed wins, the channel stays closed
        roster = switch(gw, "alpha/m1", True)
        assert lists(roster)["enabled"] == ["alpha/m1"] and channel(roster, "alpha")["closed"]
        assert row(roster, "alpha/m1")["on"] and served_route(gw, "s2") == "alpha/m1"
        # rule 3: closing the channel again clears the stale per-row override inside it
        switch(gw, "alpha", True, "provider")
        roster = switch(gw, "alpha", False, "provider")
        assert lists(roster)["enabled"] == [] and row(roster, "alpha/m1")["state"] == "off"
        # rule 4: a vision channel has no channel switch; its rows come back only by a row switch
        assert "vision channel" in switch_error(gw, "alpha-vision", True, "provider")
        roster = switch(gw, "alpha-vision/m1", True)
        assert row(roster, "alpha-vision/m1")["on"] and lists(roster)["enabled"] == ["alpha-vision/m1"]
        pools = {p["id"]: [r["route"] for r in p["routes"]] for p in admin(gw, "/admin/pools")["pools"]}
        assert "alpha-vision/m1" in pools["m1"]
        assert in_force(gw, "pool.disabled_providers") == {
            "key": "pool.disabled_providers",
            "value": ["alpha"],
            "layer": "dashboard",
        }


def test_bare_model_id_and_a_row_that_outranks_it(fleet_d: FleetThread) -> None:
    with GatewayServer(dashboard_config(fleet_d)) as gw:
        roster = switch(gw, "m1", False)
        assert lists(roster)["disabled"] == ["m1"]
        assert {row(roster, k)["state"] for k in ("alpha/m1", "beta/m1")} == {"off"}
        roster = switch(gw, "beta/m1", True)  # a row entry beats the blanket bare id
        assert lists(roster)["enabled"] == ["beta/m1"] and row(roster, "beta/m1")["on"]
        assert served_route(gw, "s") == "beta/m1"
        roster = switch(gw, "m1", True)
        assert lists(roster)["disabled"] == [] and row(roster, "alpha/m1")["on"]
        assert "no route matches" in switch_error(gw, "nothing-like-this", False)


def test_structural_reasons_cannot_be_switched_on(fleet_d: FleetThread) -> None:
    with GatewayServer(dashboard_config(fleet_d, exclude_models=["beta/m1"])) as gw:
        roster = admin(gw, "/admin/models")
        assert (
            row(roster, "beta/m1")["reason"] == "excluded" and row(roster, "beta/m1")["switchable"] is False
        )
        assert "excluded" in switch_error(gw, "beta/m1", True)
        assert "scope" in switch_error(gw, "beta/m1", True, "everything")
        assert "unknown channel" in switch_error(gw, "ghost", False, "provider")


def test_a_list_equal_to_the_file_value_goes_back_to_the_file(fleet_d: FleetThread) -> None:
    with GatewayServer(dashboard_config(fleet_d, disabled=["beta/m1"])) as gw:
        roster = admin(gw, "/admin/models")
        assert row(roster, "beta/m1")["reason"] == "manual"
        assert roster["lists"]["pool.disabled"]["layer"] == "file"
        roster = switch(gw, "beta/m1", True)
        assert roster["lists"]["pool.disabled"] == {"value": [], "layer": "dashboard"}
        roster = switch(gw, "beta/m1", False)
        assert roster["lists"]["pool.disabled"] == {"value": ["beta/m1"], "layer": "file"}
        assert "pool.disabled" not in gw.gateway.dashboard_layer


def test_provider_order_editor_api(fleet_d: FleetThread) -> None:
    with GatewayServer(dashboard_config(fleet_d, provider_order=["ghost", "beta"])) as gw:
        report = admin(gw, "/admin/providers")
        names = {p["id"]: p["name"] for p in report["providers"]}
        assert names["beta"] == "硅基流动" and names["agg"] == "Vercel AI Gateway"
        order = report["orders"]["pool.provider_order"]
        # a provider that disappeared is kept, first where it was listed, and flagged
        assert order["display"] == ["ghost", "beta", "alpha", "alpha-vision", "agg"]
        assert order["missing"] == ["ghost"] and order["layer"] == "file"
        peak = report["orders"]["peak.peak_provider_order"]
        assert peak["inherits"] and peak["display"] == order["display"]
        assert served_route(gw, "s1") == "beta/m1"
        # the registration order, saved untouched, is stored as an empty ranking (explicitly: the file
        # has a ranking of its own)
        registration = ["alpha", "beta", "alpha-vision", "agg"]
        report = admin(gw, "/admin/providers/order", {"key": "pool.provider_order", "order": registration})
        assert report["orders"]["pool.provider_order"]["value"] == []
        assert report["orders"]["pool.provider_order"]["layer"] == "dashboard"
        assert served_route(gw, "s2") == "alpha/m1"
        # a tail that is in registration order anyway is not stored
        order = ["beta", "alpha", "alpha-vision", "agg"]
        report = admin(gw, "/admin/providers/order", {"key": "pool.provider_order", "order": order})
        assert report["orders"]["pool.provider_order"]["value"] == ["beta"]
        assert report["orders"]["pool.provider_order"]["display"] == order
        # a period list equal to the order it inherits stays empty (= inherit); a different one is kept
        key = "peak.off_peak_provider_order"
        report = admin(gw, "/admin/providers/order", {"key": key, "order": order})
        assert report["orders"][key]["value"] == [] and report["orders"][key]["inherits"]
        report = admin(gw, "/admin/providers/order", {"key": key, "order": ["alpha"]})
        assert report["orders"][key]["value"] == ["alpha"]
        # back to the file
        report = admin(gw, "/admin/providers/order", {"key": "pool.provider_order", "order": None})
        assert report["orders"]["pool.provider_order"]["layer"] == "file"
        response = httpx.post(
            gw.url + "/admin/providers/order",
            json={"key": "pool.provider_order", "order": ["nobody"]},
            headers=gw.admin_headers(),
        )
        assert response.status_code == 400 and "nobody" in response.text


def test_groups_editor_api(fleet_d: FleetThread) -> None:
    with GatewayServer(dashboard_config(fleet_d)) as gw:
        report = admin(gw, "/admin/groups")
        assert [g["id"] for g in report["groups"]] == ["deepseek-v4.1-flash", "glm-5.3-flash"]
        assert report["layer"] == "default"
        mine = [{"id": "everything", "name": "Everything", "models": ["m1", "agg/*"], "merge": True}]
        report = admin(gw, "/admin/groups", {"groups": mine}, method="PUT")
        assert report["layer"] == "dashboard"
        pools = {p["id"]: p["routes"] for p in report["pools"]}
        assert pools == {"everything": ["alpha/m1", "beta/m1", "agg/deepseek/deepseek-v4.1-flash-1017"]}
        response = httpx.put(
            gw.url + "/admin/groups", json={"groups": [{"id": "x", "models": []}]}, headers=gw.admin_headers()
        )
        assert response.status_code == 400 and "pool.groups" in response.text
        report = admin(gw, "/admin/groups", {"groups": None}, method="PUT")
        assert report["layer"] == "default" and "m1" in {p["id"] for p in report["pools"]}
