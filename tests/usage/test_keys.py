"""Client keys with limits (SPEC §14) through the real server: budgets refusing before any upstream
attempt in the OpenAI and Anthropic shapes, rpm and tpm, a pool allowlist, 20 concurrent calls against a
budget of five, and usage by key that survives a restart (sqlite)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider

PRICES = {"input": 2.0, "output": 8.0}
MSG = [{"role": "user", "content": "count my spend please"}]
LONG = [{"role": "user", "content": "a long prompt, so the estimate's JSON overhead is small " * 40}]


@pytest.fixture(scope="module")
def ft() -> Iterator[FleetThread]:
    spec = FleetSpec(
        [
            SimProvider(
                "oa",
                models=[SimModel("m1", output_tokens=8), SimModel("other", output_tokens=8)],
                ttft=0.002,
                tps=5000.0,
            ),
            SimProvider(
                "an", kind="anthropic", models=[SimModel("m1", output_tokens=8)], ttft=0.002, tps=5000.0
            ),
        ]
    )
    with FleetThread(spec) as fleet:
        yield fleet


def config(ft: FleetThread, keys: list[Any], state: dict[str, Any] | None = None) -> dict[str, Any]:
    cfg = ft.to_config(
        state=state or {"backend": "memory"}, server={"admin_token": ADMIN_TOKEN, "api_keys": keys}
    )
    for p in cfg["providers"]:
        p["prices"] = PRICES
    cfg["pool"] = {"strategy": "priority", "provider_order": ["oa"], "sticky": False}
    return cfg


def one_call_cost(ft: FleetThread, messages: list[dict[str, str]] = MSG) -> float:
    """What one call with max_tokens=8 costs on oa (measured once through an open gateway)."""
    with GatewayServer(config(ft, [])) as gw:
        raw = openai.OpenAI(
            base_url=gw.url + "/v1", api_key="x", max_retries=0
        ).chat.completions.with_raw_response.create(model="m1", messages=messages, max_tokens=8)
        raw.parse()
        return float(raw.headers["x-modelpool-cost"])


def oai(gw: GatewayServer, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.url + "/v1", api_key=key, max_retries=0)


def upstream_calls(ft: FleetThread) -> int:
    return len(ft.calls("oa")) + len(ft.calls("an"))


def test_budget_refuses_before_the_upstream_in_both_shapes(ft: FleetThread) -> None:
    cost = one_call_cost(ft)
    key = {"key": "sk-team-a-secret", "name": "team-a", "budget": {"usd": cost * 2.5, "per": "day"}}
    with GatewayServer(config(ft, [key])) as gw:
        client = oai(gw, "sk-team-a-secret")
        for _ in range(2):
            client.chat.completions.create(model="m1", messages=MSG, max_tokens=8)
        ft.reset_calls()
        with pytest.raises(openai.RateLimitError) as err:
            client.chat.completions.create(model="m1", messages=MSG, max_tokens=8)
        body = err.value.response.json()["error"]
        assert body["type"] == "budget_exceeded" and "per day" in body["limit"]
        assert body["resets_at"].endswith("T00:00:00Z") and "team-a" in body["message"]
        assert "sk-team-a-secret" not in err.value.response.text
        anth = anthropic.Anthropic(base_url=gw.url, api_key="sk-team-a-secret", max_retries=0)
        with pytest.raises(anthropic.RateLimitError) as aerr:
            anth.messages.create(model="m1", max_tokens=8, messages=MSG)
        abody = aerr.value.response.json()
        assert abody["type"] == "error" and abody["error"]["type"] == "budget_exceeded"
        assert upstream_calls(ft) == 0  # refused before any upstream attempt
        keys = httpx.get(gw.url + "/admin/keys", headers=gw.admin_headers()).json()["keys"]
        assert keys[0]["name"] == "team-a" and keys[0]["calls"] == 2
        assert keys[0]["budget_state"]["spent_usd"] == pytest.approx(2 * cost, rel=1e-6)
        assert "sk-team-a-secret" not in json.dumps(keys)


def test_rpm_tpm_and_pool_allowlist(ft: FleetThread) -> None:
    keys = [
        {"key": "sk-rpm", "name": "rpm-2", "rpm": 2},
        {"key": "sk-tpm", "name": "tpm-small", "tpm": 5},
        {"key": "sk-pools", "name": "only-m1", "pools": ["m1*"]},
        "sk-plain",
    ]
    with GatewayServer(config(ft, keys)) as gw:
        rpm = oai(gw, "sk-rpm")
        rpm.chat.completions.create(model="m1", messages=MSG, max_tokens=8)
        rpm.chat.completions.create(model="m1", messages=MSG, max_tokens=8)
        with pytest.raises(openai.RateLimitError) as err:
            rpm.chat.completions.create(model="m1", messages=MSG, max_tokens=8)
        assert err.value.response.json()["error"]["type"] == "rate_limited"
        assert err.value.response.json()["error"]["limit"] == "rpm 2"
        assert int(err.value.response.headers["retry-after"]) <= 61
        with pytest.raises(openai.RateLimitError) as err:  # the prompt alone is over 5 tokens a minute
            oai(gw, "sk-tpm").chat.completions.create(model="m1", messages=MSG, max_tokens=8)
        assert err.value.response.json()["error"]["limit"] == "tpm 5"
        pools = oai(gw, "sk-pools")
        pools.chat.completions.create(model="m1", messages=MSG, max_tokens=8)
        ft.reset_calls()
        with pytest.raises(openai.PermissionDeniedError) as perr:
            pools.chat.completions.create(model="other", messages=MSG, max_tokens=8)
        assert perr.value.response.json()["error"]["type"] == "forbidden"
        assert upstream_calls(ft) == 0
        oai(gw, "sk-plain").chat.completions.create(model="other", messages=MSG, max_tokens=8)  # no limits
        with pytest.raises(openai.AuthenticationError):
            oai(gw, "sk-wrong").chat.completions.create(model="m1", messages=MSG)
        report = httpx.get(gw.url + "/admin/usage?group_by=key", headers=gw.admin_headers()).json()
        by_key = {r["key"]: r["calls"] for r in report["rows"]}
        assert by_key["rpm-2"] == 2 and by_key["only-m1"] == 1 and "tpm-small" not in by_key
        assert any(k.startswith("key-") for k in by_key)  # the plain key stands as its short hash
        assert "sk-plain" not in json.dumps(report)


def test_twenty_concurrent_calls_against_a_budget_of_five(ft: FleetThread) -> None:
    cost = one_call_cost(ft, LONG)
    key = {"key": "sk-burst", "name": "burst", "budget": {"usd": cost * 5, "per": "total"}}
    with GatewayServer(config(ft, [key])) as gw:
        ft.reset_calls()

        async def burst() -> list[int]:
            client = openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key="sk-burst", max_retries=0)

            async def one() -> int:
                try:
                    await client.chat.completions.create(model="m1", messages=LONG, max_tokens=8)
                    return 200
                except openai.RateLimitError:
                    return 429

            return list(await asyncio.gather(*(one() for _ in range(20))))

        codes = asyncio.run(burst())
        served = codes.count(200)
        # The estimate (input = body bytes / 4, output = max_tokens) is a little above the real cost, so
        # the reservations admit four or five of the twenty, never more than six.
        assert 4 <= served <= 6 and codes.count(429) == 20 - served
        assert upstream_calls(ft) == served
        spent = httpx.get(gw.url + "/admin/keys", headers=gw.admin_headers()).json()["keys"][0]
        # never more than one call's estimate over the budget (here the estimate covers the real cost)
        assert spent["cost_usd"] <= cost * 6 + 1e-12
        assert served * cost == pytest.approx(spent["cost_usd"], rel=1e-6)


def test_usage_and_budget_survive_a_restart_and_the_cli_prints_them(ft: FleetThread, tmp_path: Path) -> None:
    cost = one_call_cost(ft)
    state = {"backend": "sqlite", "path": str(tmp_path / "state.db")}
    key = {"key": "sk-persist", "name": "persist", "budget": {"usd": cost * 3.5, "per": "month"}}
    cfg = config(ft, [key], state)
    with GatewayServer(cfg) as gw:
        for _ in range(3):
            oai(gw, "sk-persist").chat.completions.create(model="m1", messages=MSG, max_tokens=8)
    with GatewayServer(cfg) as gw:
        report = httpx.get(gw.url + "/admin/usage?group_by=key", headers=gw.admin_headers()).json()
        assert report["rows"][0]["key"] == "persist" and report["rows"][0]["calls"] == 3
        assert report["rows"][0]["cost_usd"] == pytest.approx(3 * cost, rel=1e-6)
        with pytest.raises(openai.RateLimitError):  # the month's spend was read back from the usage rows
            oai(gw, "sk-persist").chat.completions.create(model="m1", messages=MSG, max_tokens=8)
        out = _cli(["usage", "--by", "day", "--json", "--url", gw.url])
        data = json.loads(out)
        assert data["rows"][0]["calls"] == 3 and data["group_by"] == "day"
        table = _cli(["usage", "--by", "route", "--url", gw.url])
        assert "oa/m1" in table and "total" in table
        keys = _cli(["keys", "--url", gw.url])
        assert "persist" in keys and "sk-persist" not in keys


def _cli(args: list[str]) -> str:
    import os

    env = {**os.environ, "MODELPOOL_ADMIN_TOKEN": ADMIN_TOKEN, "COLUMNS": "200"}
    res = subprocess.run([sys.executable, "-m", "modelpool.cli.main", *args], capture_output=True, text=True,
                         env=env, timeout=60)  # fmt: skip
    assert res.returncode == 0, res.stderr
    return res.stdout
