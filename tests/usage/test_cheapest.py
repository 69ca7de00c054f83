"""`cheapest` by the expected cost of the call (SPEC §14) through the real server: real prices beat the
`cost` hint, the order flips with the period (config `{peak, off_peak}`, and the price library's own
DeepSeek windows), and the ranking reasons name the price that decided."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import openai
import pytest

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider
from replicas import wait_for

# Wednesday 2026-11-25: 02:00 UTC is 10:00 in Beijing (peak, and inside DeepSeek's 01:00-04:00 UTC
# window); 12:00 UTC is 20:00 (off-peak).
PEAK_AT = datetime(2026, 11, 25, 2, 0, tzinfo=UTC).timestamp()
OFF_AT = datetime(2026, 11, 25, 12, 0, tzinfo=UTC).timestamp()
MODEL = "deepseek-v4-flash"


class Clock:
    def __init__(self, at: float) -> None:
        self.at = at

    def __call__(self) -> float:
        return self.at


@pytest.fixture(scope="module")
def ft() -> Iterator[FleetThread]:
    fast = {"ttft": 0.002, "tps": 5000.0}
    spec = FleetSpec([SimProvider(pid, models=[SimModel(MODEL, output_tokens=4)], **fast)
                      for pid in ("deepseek", "flat", "dayrate")])  # fmt: skip
    with FleetThread(spec) as fleet:
        yield fleet


def config(ft: FleetThread, **prices: Any) -> dict[str, Any]:
    cfg = ft.to_config(state={"backend": "memory"}, server={"admin_token": ADMIN_TOKEN})
    for p in cfg["providers"]:
        if p["id"] in prices:
            p["prices"] = prices[p["id"]]
        p["cost"] = {"deepseek": 9.0, "flat": 0.1, "dayrate": 0.2}[p["id"]]  # hints say the opposite
    cfg["pool"] = {"strategy": "cheapest", "sticky": False}
    return cfg


def served(gw: GatewayServer, session: str) -> tuple[str, list[dict[str, Any]]]:
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0)
    raw = client.chat.completions.with_raw_response.create(
        model=MODEL, messages=[{"role": "user", "content": "x" * 4000}], max_tokens=4,
        extra_headers={"x-session-id": session},
    )  # fmt: skip
    raw.parse()
    detail = httpx.get(f"{gw.url}/admin/sessions/{session}", headers=gw.admin_headers()).json()
    plan = detail["last_plan"]
    return raw.headers["x-modelpool-route"], plan["candidates"]


def library_priced(gw: GatewayServer) -> bool:
    routes = httpx.get(gw.url + "/admin/prices", headers=gw.admin_headers()).json()["routes"]
    return any(r["route"] == "deepseek/" + MODEL and r["pricing"] for r in routes)


def test_config_period_prices_beat_the_hint_and_flip_with_the_period(ft: FleetThread) -> None:
    prices = {
        "deepseek": {"source": "off"},  # only the hint: ranks after every priced route
        "flat": {"input": 1.0, "output": 2.0},
        "dayrate": {"peak": {"input": 2.0, "output": 4.0}, "off_peak": {"input": 0.5, "output": 1.0}},
    }
    clock = Clock(PEAK_AT)
    with GatewayServer(config(ft, **prices), clock=clock) as gw:
        route, cands = served(gw, "s-peak")
        assert route == "flat/" + MODEL  # the hint (0.1 < 0.2) agrees here; the price decides below
        assert "config flat" in cands[0]["why"][-1] and "expected $" in cands[0]["why"][-1]
        assert "(peak)" in cands[1]["why"][-1]
        assert "no price: cost hint 9" in cands[2]["why"][-1]
        clock.at = OFF_AT
        route, cands = served(gw, "s-off")
        assert route == "dayrate/" + MODEL  # against the hint: the off-peak price is the lowest
        assert "(off-peak)" in cands[0]["why"][-1]


def test_the_price_library_knows_deepseeks_own_off_peak_windows(ft: FleetThread) -> None:
    prices = {"flat": {"input": 0.2, "output": 0.9}, "dayrate": {"source": "off"}}
    clock = Clock(OFF_AT)
    with GatewayServer(config(ft, **prices), clock=clock) as gw:
        wait_for(lambda: library_priced(gw), what="genai-prices loaded (a thread at start-up)")
        route, cands = served(gw, "lib-off")
        assert route == "deepseek/" + MODEL  # genai-prices: 0.15 in / 0.6 out off-peak
        assert "genai-prices deepseek/deepseek-v4-flash" in cands[0]["why"][-1]
        clock.at = PEAK_AT
        route, cands = served(gw, "lib-peak")
        assert route == "flat/" + MODEL  # DeepSeek's peak window doubles its price: 0.3 in / 1.2 out
        prices_now = httpx.get(gw.url + "/admin/prices", headers=gw.admin_headers()).json()["routes"]
        ds = next(r for r in prices_now if r["route"] == "deepseek/" + MODEL)
        assert ds["in_force"]["input"] == pytest.approx(0.3) and ds["pricing"]["kind"] == "schedule"
