"""Cost per call (SPEC §14) through the real server with the official SDKs: the upstream's reported usage
× the prices in force at the call's start, in `x-modelpool-cost`, the final metadata, the call log line,
`/metrics` and the usage API."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import anthropic
import httpx
import openai
import orjson
import pytest

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import Fault, FleetSpec, FleetThread, SimModel, SimProvider

# USD per 1M tokens
OA = {"input": 2.0, "cached_input": 0.5, "cache_write": 2.5, "output": 8.0}
AN_PEAK = {"input": 3.0, "cached_input": 0.3, "cache_write": 3.75, "output": 15.0}
AN_OFF = {"input": 1.5, "cached_input": 0.15, "cache_write": 1.875, "output": 7.5}
# Wednesday 2026-11-25: 10:00 Beijing is peak (window 09:00-12:00), 20:00 is not.
PEAK_AT = datetime(2026, 11, 25, 2, 0, tzinfo=UTC).timestamp()
OFF_AT = datetime(2026, 11, 25, 12, 0, tzinfo=UTC).timestamp()


def spec() -> FleetSpec:
    fast = {"ttft": 0.002, "tps": 5000.0}
    model = SimModel("m1", output_tokens=7, cached_tokens=5, cache_creation_tokens=3)
    return FleetSpec(
        [
            SimProvider("oa", models=[model], **fast),
            SimProvider("an", kind="anthropic", models=[model], **fast),
            SimProvider("bad", models=[SimModel("m1", output_tokens=7)], **fast),
        ]
    )


@pytest.fixture(scope="module")
def ft() -> Iterator[FleetThread]:
    with FleetThread(spec()) as fleet:
        yield fleet


class Clock:
    def __init__(self, at: float) -> None:
        self.at = at

    def __call__(self) -> float:
        return self.at


def config(ft: FleetThread, order: list[str]) -> dict[str, Any]:
    cfg = ft.to_config(state={"backend": "memory"}, server={"admin_token": ADMIN_TOKEN})
    for p in cfg["providers"]:
        if p["id"] == "oa":
            p["prices"] = OA
        elif p["id"] == "an":
            p["model_info"] = {
                "m*": {
                    **p.get("model_info", {}).get("m1", {}),
                    "prices": {"peak": AN_PEAK, "off_peak": AN_OFF},
                }
            }
        else:
            p["prices"] = {"input": 100.0, "output": 100.0}
    cfg["pool"] = {"strategy": "priority", "provider_order": order, "retry_backoff": "1ms", "sticky": False}
    return cfg


def expected(prices: dict[str, float], usage: dict[str, int]) -> float:
    """Normalized usage (prompt counts cached and written) × USD per 1M."""
    fresh = usage["prompt"] - usage["cached"] - usage["written"]
    return (
        fresh * prices["input"]
        + usage["cached"] * prices["cached_input"]
        + usage["written"] * prices["cache_write"]
        + usage["output"] * prices["output"]
    ) / 1e6


def openai_usage(u: Any) -> dict[str, int]:
    u = u if isinstance(u, dict) else u.model_dump()
    return {
        "prompt": u["prompt_tokens"],
        "cached": (u.get("prompt_tokens_details") or {}).get("cached_tokens") or 0,
        "written": u.get("cache_creation_input_tokens") or 0,
        "output": u["completion_tokens"],
    }


def anthropic_usage(u: Any) -> dict[str, int]:
    u = u if isinstance(u, dict) else u.model_dump()
    cached, written = u.get("cache_read_input_tokens") or 0, u.get("cache_creation_input_tokens") or 0
    return {"prompt": u["input_tokens"] + cached + written, "cached": cached, "written": written,
            "output": u["output_tokens"]}  # fmt: skip


def oai(gw: GatewayServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0)


MSG = [{"role": "user", "content": "hello there, what does this cost? " * 8}]


def test_chat_non_streamed_cost_header_and_usage_api(ft: FleetThread) -> None:
    with GatewayServer(config(ft, ["oa"])) as gw:
        raw = oai(gw).chat.completions.with_raw_response.create(model="m1", messages=MSG)
        body = raw.parse()
        usage = openai_usage(body.usage)
        assert usage["cached"] == 5 and usage["written"] == 3  # the sim reported cache reads and writes
        cost = expected(OA, usage)
        assert float(raw.headers["x-modelpool-cost"]) == pytest.approx(cost, rel=1e-9)
        report = httpx.get(gw.url + "/admin/usage?group_by=route", headers=gw.admin_headers()).json()
        assert report["rows"][0]["route"] == "oa/m1"
        assert report["rows"][0]["cost_usd"] == pytest.approx(cost, rel=1e-9)
        assert report["rows"][0]["tokens_cached"] == 5 and report["rows"][0]["tokens_cache_write"] == 3
        metrics = httpx.get(gw.url + "/metrics", headers=gw.admin_headers()).text
        line = next(x for x in metrics.splitlines() if x.startswith("modelpool_cost_usd_total{"))
        assert 'pool="m1"' in line and 'route="oa/m1"' in line and 'key="-"' in line
        assert float(line.rsplit(" ", 1)[1]) == pytest.approx(cost, rel=1e-9)


def test_chat_streamed_cost_on_the_final_chunk(ft: FleetThread) -> None:
    with GatewayServer(config(ft, ["oa"])) as gw:
        stream = oai(gw).chat.completions.create(
            model="m1", messages=MSG, stream=True, stream_options={"include_usage": True}
        )
        chunks = list(stream)
        last = chunks[-1].model_dump()
        usage = openai_usage(next(c.usage for c in chunks if c.usage))
        assert last["modelpool"]["cost"] == pytest.approx(expected(OA, usage), rel=1e-9)


@pytest.mark.parametrize("at,prices", [(PEAK_AT, AN_PEAK), (OFF_AT, AN_OFF)], ids=["peak", "off-peak"])
def test_messages_cache_reads_and_writes_at_the_period_price(
    ft: FleetThread, at: float, prices: dict
) -> None:
    with GatewayServer(config(ft, ["an"]), clock=Clock(at)) as gw:
        client = anthropic.Anthropic(base_url=gw.url, api_key="x", max_retries=0)
        raw = client.messages.with_raw_response.create(model="m1", max_tokens=50, messages=MSG)
        msg = raw.parse()
        usage = anthropic_usage(msg.usage)
        assert usage["cached"] == 5 and usage["written"] == 3
        cost = expected(prices, usage)
        assert float(raw.headers["x-modelpool-cost"]) == pytest.approx(cost, rel=1e-9)
        assert orjson.loads(raw.http_response.content)["modelpool"]["cost"] == pytest.approx(cost, rel=1e-9)
        # streamed: the cost rides on message_delta's modelpool field
        with client.messages.stream(model="m1", max_tokens=50, messages=MSG) as s:
            events = list(s)
        delta = next(e for e in events if e.type == "message_delta").model_dump()
        final = s.get_final_message()
        assert delta["modelpool"]["cost"] == pytest.approx(
            expected(prices, anthropic_usage(final.usage)), rel=1e-9
        )


def test_responses_streamed_and_not(ft: FleetThread) -> None:
    with GatewayServer(config(ft, ["oa"])) as gw:
        client = oai(gw)
        raw = client.responses.with_raw_response.create(model="m1", input="what does this cost? " * 8)
        resp = raw.parse()
        u = resp.usage.model_dump()
        details = u["input_tokens_details"]
        usage = {
            "prompt": u["input_tokens"],
            "cached": details["cached_tokens"],
            "written": details.get("cache_write_tokens") or 0,
            "output": u["output_tokens"],
        }
        assert float(raw.headers["x-modelpool-cost"]) == pytest.approx(expected(OA, usage), rel=1e-9)
        events = list(client.responses.create(model="m1", input="what does this cost? " * 8, stream=True))
        done = events[-1].model_dump()
        assert done["type"] == "response.completed"
        meta = done["response"].get("modelpool") or done.get("modelpool")
        assert meta["cost"] == pytest.approx(expected(OA, usage), rel=1e-9)


def test_a_switched_walk_costs_the_serving_route_at_its_price(ft: FleetThread) -> None:
    ft.set_faults("bad", [Fault("server_error", status=500)])
    try:
        with GatewayServer(config(ft, ["bad", "oa"])) as gw:
            raw = oai(gw).chat.completions.with_raw_response.create(model="m1", messages=MSG)
            body = raw.parse()
            assert raw.headers["x-modelpool-route"] == "oa/m1" and "x-modelpool-switched" in raw.headers
            cost = expected(OA, openai_usage(body.usage))  # the failed attempt reported no usage
            assert float(raw.headers["x-modelpool-cost"]) == pytest.approx(cost, rel=1e-9)
    finally:
        ft.set_faults("bad", [])


def test_unknown_price_is_no_cost(ft: FleetThread) -> None:
    cfg = config(ft, ["oa"])
    for p in cfg["providers"]:
        p.pop("prices", None)
        p.pop("model_info", None)
    with GatewayServer(cfg) as gw:
        raw = oai(gw).chat.completions.with_raw_response.create(model="m1", messages=MSG)
        raw.parse()
        assert "x-modelpool-cost" not in raw.headers
