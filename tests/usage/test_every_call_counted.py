"""Every call is counted (SPEC §14, issue #26), through the real server with the official SDKs.

- A native OpenAI stream whose client did not ask for usage is counted with the upstream's real tokens
  and cost: modelpool asks the route for `include_usage`, and the client's stream is the one it would have
  had without it (no usage chunk, no `"usage":null`), event for event and byte for byte.
- A client that asks for usage still gets its usage chunk.
- A route that reports no usage at all is counted from an estimate of the text, marked `estimated`.
- A forced-route call (`x-modelpool-route`) counts under the pool the client named.
- The call log line's `tokens_in` is all input (cache reads included) on every path, `tokens_cached` the
  cached part.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import orjson
import pytest

from gateway_server import ADMIN_TOKEN, GatewayServer
from modelpool.sim import Fault, FleetSpec, FleetThread, SimModel, SimProvider
from serve_process import serve_process

PRICES = {"input": 2.0, "cached_input": 0.5, "cache_write": 2.5, "output": 8.0}  # USD per 1M
MSG = [{"role": "user", "content": "count this call, please " * 10}]


def spec() -> FleetSpec:
    fast: dict[str, Any] = {"ttft": 0.002, "tps": 5000.0}
    model = SimModel("m1", output_tokens=9, cached_tokens=5)
    return FleetSpec(
        [
            SimProvider("oa", models=[model], **fast),
            SimProvider("mute", models=[SimModel("m1", output_tokens=9)], reports_usage=False, **fast),
            SimProvider("an", kind="anthropic", models=[model], **fast),
        ]
    )


@pytest.fixture(scope="module")
def ft() -> Iterator[FleetThread]:
    with FleetThread(spec()) as fleet:
        yield fleet


def config(ft: FleetThread, route: str) -> dict[str, Any]:
    cfg = ft.to_config(providers=[route], state={"backend": "memory"}, server={"admin_token": ADMIN_TOKEN})
    cfg["providers"][0]["prices"] = PRICES
    cfg["pool"] = {"retry_backoff": "1ms", "sticky": False}
    return cfg


def cost(usage: dict[str, Any]) -> float:
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    fresh = usage["prompt_tokens"] - cached
    out = usage["completion_tokens"]
    return (fresh * PRICES["input"] + cached * PRICES["cached_input"] + out * PRICES["output"]) / 1e6


def usage_report(gw: GatewayServer, by: str = "route") -> dict[str, Any]:
    r = httpx.get(f"{gw.url}/admin/usage?group_by={by}", headers=gw.admin_headers(), timeout=10)
    return r.json()  # type: ignore[no-any-return]


def stream_bytes(gw: GatewayServer, **kw: Any) -> bytes:
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0)
    with client.chat.completions.with_streaming_response.create(
        model="m1", messages=MSG, stream=True, **kw
    ) as raw:
        return b"".join(raw.iter_bytes())


def events(data: bytes) -> list[bytes]:
    return [e for e in data.split(b"\n\n") if e]


_VARYING = re.compile(rb'"id":"[^"]*"|"created":\d+')


def same_but_ids(a: bytes) -> bytes:
    return _VARYING.sub(b"", a)


def test_a_stream_without_include_usage_is_counted_and_looks_as_it_was(ft: FleetThread) -> None:
    ft.reset_calls()
    with GatewayServer(config(ft, "oa")) as gw:
        got = stream_bytes(gw)
        report = usage_report(gw)
    # Upstream: the same body, plus the usage request.
    call = ft.calls("oa")[-1]
    assert call.body is not None and call.body["stream_options"] == {"include_usage": True}
    sent = {"model": "m1", "messages": MSG, "stream": True}
    assert {k: v for k, v in call.body.items() if k != "stream_options"} == sent

    # The client's stream: what the route sends a client that did not ask (byte for byte apart from the
    # ids and the final chunk's `modelpool` metadata) — no usage chunk, no `"usage":null`.
    direct = httpx.post(ft.base_url("oa") + "/chat/completions", json=sent, timeout=10).content
    mine, theirs = events(got), events(direct)
    assert len(mine) == len(theirs), (mine, theirs)
    assert b'"usage"' not in got and b'"choices":[]' not in got
    for a, b in zip(mine[:-2], theirs[:-2], strict=True):
        assert same_but_ids(a) == same_but_ids(b)
    final = orjson.loads(mine[-2].removeprefix(b"data: "))
    meta = final.pop("modelpool")
    assert final == {**orjson.loads(theirs[-2].removeprefix(b"data: ")), "id": final["id"]} | {
        "created": final["created"]
    }
    assert mine[-1] == theirs[-1] == b"data: [DONE]"

    # The books: the upstream's real tokens and their cost.
    upstream = orjson.loads(
        events(httpx.post(ft.base_url("oa") + "/chat/completions", json={**sent, **USAGE}).content)[-2][6:]
    )["usage"]
    row = report["rows"][0]
    assert row["tokens_in"] == upstream["prompt_tokens"] > 0
    assert row["tokens_out"] == upstream["completion_tokens"] == 9
    assert row["tokens_cached"] == 5 and row["estimated"] == 0
    assert row["cost_usd"] == pytest.approx(cost(upstream), rel=1e-9) and row["cost_usd"] > 0
    assert meta["cost"] == pytest.approx(cost(upstream), rel=1e-9)


USAGE = {"stream_options": {"include_usage": True}}


def test_a_client_that_asks_still_gets_its_usage_chunk(ft: FleetThread) -> None:
    ft.reset_calls()
    with GatewayServer(config(ft, "oa")) as gw:
        got = stream_bytes(gw, **USAGE)
        client = openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0)
        chunks = list(client.chat.completions.create(model="m1", messages=MSG, stream=True, **USAGE))
    assert ft.calls("oa")[-1].body == {"model": "m1", "messages": MSG, "stream": True, **USAGE}  # as sent
    last = orjson.loads(events(got)[-2][6:])
    assert last["choices"] == [] and last["usage"]["completion_tokens"] == 9
    assert b'"usage":null' in events(got)[0]  # the route's own bytes, as it sent them to a client that asked
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens > 0


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
def test_a_route_that_reports_no_usage_is_estimated(ft: FleetThread, stream: bool) -> None:
    with GatewayServer(config(ft, "mute")) as gw:
        client = openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0)
        if stream:
            chunks = list(client.chat.completions.create(model="m1", messages=MSG, stream=True))
            text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        else:
            text = client.chat.completions.create(model="m1", messages=MSG).choices[0].message.content or ""
        report = usage_report(gw)
    row = report["rows"][0]
    assert row["route"] == "mute/m1" and row["calls"] == 1 and row["estimated"] == 1
    assert row["tokens_in"] >= len(MSG[0]["content"]) // 4  # the prompt's text, ~4 characters a token
    assert 1 <= row["tokens_out"] <= max(9, len(text))  # about the 9 tokens the answer had
    assert row["cost_usd"] > 0 and report["total"]["estimated"] == 1


def test_a_forced_route_counts_under_the_pool_named(ft: FleetThread) -> None:
    with GatewayServer(config(ft, "oa")) as gw:
        client = openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0)
        client.chat.completions.create(model="m1", messages=MSG, extra_headers={"x-modelpool-route": "oa/m1"})
        pools = {r["pool"] for r in usage_report(gw, "pool")["rows"]}
        metrics = httpx.get(gw.url + "/metrics", headers=gw.admin_headers(), timeout=10).text
    assert pools == {"m1"}
    cost_lines = [ln for ln in metrics.splitlines() if ln.startswith("modelpool_cost_usd_total{")]
    assert cost_lines and all('pool="m1"' in ln for ln in cost_lines), cost_lines


def test_the_log_line_counts_input_tokens_one_way(ft: FleetThread, tmp_path: Path) -> None:
    """The same Anthropic usage (5 cache reads) logs the same `tokens_in` translated or native, streamed
    or not: every input token, the cached ones included, and `tokens_cached` on its own."""
    cfg = config(ft, "an")
    with serve_process(cfg, tmp_path, "--log-format", "json") as gw:
        a = anthropic.Anthropic(base_url=gw.url, api_key="x", max_retries=0)
        o = openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0)
        native = a.messages.create(model="m1", max_tokens=64, messages=MSG)
        with a.messages.stream(model="m1", max_tokens=64, messages=MSG) as s:
            s.get_final_message()
        o.chat.completions.create(model="m1", messages=MSG)  # translated to Messages
        list(o.chat.completions.create(model="m1", messages=MSG, stream=True))
        stderr = gw.stop()
    lines = [orjson.loads(ln) for ln in stderr.splitlines() if ln.startswith("{")]
    calls = [ln for ln in lines if ln.get("logger") == "modelpool.calls"]
    assert [(c["dialect"], c["stream"]) for c in calls] == [
        ("anthropic", False),
        ("anthropic", True),
        ("openai", False),
        ("openai", True),
    ]
    total_in = native.usage.input_tokens + (native.usage.cache_read_input_tokens or 0)
    assert native.usage.cache_read_input_tokens == 5
    for c in calls:
        assert (c["tokens_in"], c["tokens_cached"], c["tokens_out"]) == (total_in, 5, 9), c
        assert c.get("usage_estimated") is None


def hedge_spec() -> FleetSpec:
    fast: dict[str, Any] = {"ttft": 0.002, "tps": 5000.0}
    return FleetSpec(
        [
            SimProvider("slow", kind="anthropic", models=[SimModel("m1", output_tokens=9)], **fast),
            SimProvider("fast", models=[SimModel("m1", output_tokens=9)], **fast),
        ]
    )


@pytest.mark.parametrize("dialect", ["anthropic", "openai"])
def test_a_hedge_loser_is_billed_for_the_input_it_reported(dialect: str) -> None:
    """`slow` (Anthropic) sends message_start — its input tokens — then stalls; the hedge on `fast` wins.
    The loser's reported input is counted and priced at its own route's price: natively relayed to an
    Anthropic client, translated for an OpenAI one."""
    slow_prices = {"input": 10.0, "output": 10.0}
    with FleetThread(hedge_spec()) as ft:
        ft.set_faults("slow", [Fault("stall", delay=3.0, headers=True)])
        cfg = ft.to_config(state={"backend": "memory"}, server={"admin_token": ADMIN_TOKEN})
        for p in cfg["providers"]:
            p["prices"] = slow_prices if p["id"] == "slow" else PRICES
        cfg["pool"] = {
            "strategy": "priority",
            "provider_order": ["slow", "fast"],
            "sticky": False,
            "hedge": {"enabled": True, "after": "200ms", "budget": "100%"},
        }
        with GatewayServer(cfg) as gw:
            if dialect == "anthropic":
                a = anthropic.Anthropic(base_url=gw.url, api_key="x", max_retries=0)
                with a.messages.stream(model="m1", max_tokens=64, messages=MSG) as s:
                    final = s.get_final_message()
                won_in, won_out = final.usage.input_tokens, final.usage.output_tokens
            else:
                o = openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0)
                chunks = list(o.chat.completions.create(model="m1", messages=MSG, stream=True, **USAGE))
                usage = next(c.usage for c in chunks if c.usage)
                won_in, won_out = usage.prompt_tokens, usage.completion_tokens
            report = usage_report(gw)
    lost = ft.calls("slow")[-1]
    assert lost.disconnected, "the loser was not cancelled"
    lost_in = report["total"]["tokens_in"] - won_in
    assert lost_in > 0, report  # the loser's message_start input tokens
    (row,) = report["rows"]
    assert row["route"] == "fast/m1" and row["calls"] == 1
    lost_out = row["tokens_out"] - won_out
    assert lost_out in (0, 1)  # message_start's placeholder output count, as reported
    expected = (won_in * PRICES["input"] + won_out * PRICES["output"]) / 1e6
    expected += (lost_in * slow_prices["input"] + lost_out * slow_prices["output"]) / 1e6
    assert row["cost_usd"] == pytest.approx(expected, rel=1e-9)
