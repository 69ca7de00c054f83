"""Quota seen before it runs out (SPEC §3.8), through the real server: a route announcing its last requests
(or too few tokens for the next call) is demoted before it answers 429, and is first again after its
reset — with OpenAI's `x-ratelimit-*` headers, Anthropic's `anthropic-ratelimit-*` ones, native and
translated, streamed or not."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anthropic
import httpx
import pytest
from routing_helpers import MODEL, admin, ask, config, plan_reasons

from gateway_server import GatewayServer
from modelpool.cli.render import console, render_status
from modelpool.sim import FleetSpec, FleetThread, SimModel, SimProvider
from modelpool.sim.spec import RateLimit

WINDOW = 2.0  # seconds: the sim's rate-limit window (short, so a test sees the reset)


def provider(pid: str, kind: str = "openai", limit: RateLimit | None = None) -> SimProvider:
    return SimProvider(
        pid, kind=kind, models=[SimModel(MODEL, output_tokens=4)], ttft=0.002, tps=5000.0, rate_limit=limit
    )


@contextmanager
def pool(*providers: SimProvider, **pool_cfg: Any) -> Iterator[tuple[FleetThread, GatewayServer]]:
    with FleetThread(FleetSpec(list(providers))) as ft, GatewayServer(config(ft, **pool_cfg)) as gw:
        yield ft, gw


def refused(ft: FleetThread, pid: str) -> int:
    """429s the sim's rate limiter answered on `pid`."""
    return sum(1 for c in ft.calls(pid) if c.status == 429)


def wait_past(reset_after: float) -> None:
    time.sleep(max(0.0, reset_after - time.monotonic()) + 0.3)


@pytest.mark.parametrize("stream", [False, True])
def test_a_route_counting_down_to_zero_is_left_before_its_429_and_first_again_after_its_reset(
    stream: bool,
) -> None:
    limited = provider("alpha", limit=RateLimit(requests=3, window=WINDOW))
    with pool(limited, provider("beta")) as (ft, gw):
        window_start = time.monotonic()
        served = [ask(gw, session="s1", stream=stream).served_by for _ in range(3)]
        assert served == ["alpha/m1"] * 3  # remaining 2, 1, 0
        # 0 requests left: the next calls go elsewhere, before any 429
        assert ask(gw, session="s1", stream=stream).served_by == "beta/m1"
        why = plan_reasons(gw, "s1")["alpha/m1"]
        assert any(w.startswith("demoted: quota low: 0 requests left until ") for w in why), why
        assert any(w == "sticky pin moved: quota low" for w in why), why
        assert ask(gw, session="s2", stream=stream).served_by == "beta/m1"
        assert refused(ft, "alpha") == 0
        # status says it too, with the time of the reset
        status = admin(gw, "/admin/status")
        row = next(r for r in status["ranking"] if r["route"] == "alpha/m1")
        assert row["quota"]["low"].startswith("quota low: 0 requests left until ")
        with console.capture() as shown:
            render_status(status)
        assert "alpha/m1: quota low: 0 requests left until" in shown.get()
        # after the reset it is first again (a new conversation: the strategy decides)
        wait_past(window_start + WINDOW)
        assert ask(gw, session="s3", stream=stream).served_by == "alpha/m1"
        assert refused(ft, "alpha") == 0


def test_anthropic_headers_on_a_native_messages_route_move_calls_before_the_429() -> None:
    limited = provider(
        "alpha", kind="anthropic", limit=RateLimit(requests=2, window=WINDOW, style="anthropic")
    )
    with pool(limited, provider("beta", kind="anthropic")) as (ft, gw):
        sdk = anthropic.Anthropic(base_url=gw.url, api_key="x", max_retries=0)
        window_start = time.monotonic()

        def call(session: str) -> str:
            raw = sdk.messages.with_raw_response.create(
                model=MODEL,
                max_tokens=32,
                messages=[{"role": "user", "content": "hello"}],
                extra_headers={"x-session-id": session},
            )
            raw.parse()
            return raw.headers["x-modelpool-route"]

        assert [call("a1"), call("a2")] == ["alpha/m1", "alpha/m1"]
        assert call("a3") == "beta/m1"
        assert any("quota low: 0 requests left until" in w for w in plan_reasons(gw, "a3")["alpha/m1"])
        assert refused(ft, "alpha") == 0
        wait_past(window_start + WINDOW + 1.0)  # Anthropic announces its reset in whole seconds
        assert call("a4") == "alpha/m1"
        assert refused(ft, "alpha") == 0


def test_anthropic_headers_read_from_a_translated_call_too() -> None:
    # An OpenAI client on a Messages route: the reply is translated, its headers still count.
    limited = provider(
        "alpha", kind="anthropic", limit=RateLimit(requests=2, window=WINDOW, style="anthropic")
    )
    with pool(limited, provider("beta")) as (ft, gw):
        assert [ask(gw, session="t1").served_by, ask(gw, session="t2", stream=True).served_by] == [
            "alpha/m1",
            "alpha/m1",
        ]
        assert ask(gw, session="t3").served_by == "beta/m1"
        assert refused(ft, "alpha") == 0


def test_remaining_tokens_below_the_calls_estimate_demote_the_route() -> None:
    # Each call ("hello") costs the sim 1 prompt + 4 output tokens; the gateway estimates the prompt at
    # 5 and `reserve.tokens: 4` keeps room for the answer. 14 tokens a window: 9 left after one call
    # (room for 5 + 4), 4 after two (no room).
    limited = provider("alpha", limit=RateLimit(tokens=14, window=WINDOW))
    with pool(limited, provider("beta"), quota={"reserve": {"requests": 1, "tokens": 4}}) as (ft, gw):
        window_start = time.monotonic()
        served = [ask(gw, session=f"k{i}").served_by for i in range(4)]
        assert served[:2] == ["alpha/m1", "alpha/m1"], served
        assert served[2:] == ["beta/m1", "beta/m1"], served
        why = plan_reasons(gw, "k3")["alpha/m1"]
        assert any(w.startswith("demoted: quota low: ") and "tokens left (call ~" in w for w in why), why
        assert refused(ft, "alpha") == 0
        wait_past(window_start + WINDOW)
        assert ask(gw, session="k9").served_by == "alpha/m1"


def test_with_header_reading_off_the_route_answers_its_429_and_the_walk_switches() -> None:
    # The counter-test: `pool.quota.enabled: false` walks into the wall (what the headers avoid).
    limited = provider("alpha", limit=RateLimit(requests=2, window=30.0))
    with pool(limited, provider("beta"), quota={"enabled": False}, retries_per_route=0) as (ft, gw):
        assert [ask(gw, session=f"o{i}").served_by for i in range(3)] == ["alpha/m1", "alpha/m1", "beta/m1"]
        assert refused(ft, "alpha") == 1


def test_resetting_health_forgets_what_a_route_announced() -> None:
    """`POST /admin/health/reset` (SPEC §5) clears a route's announced quota with its health: first again."""
    limited = provider("alpha", limit=RateLimit(requests=1, window=60.0))
    with pool(limited, provider("beta")) as (ft, gw):
        assert ask(gw, session="r1").served_by == "alpha/m1"  # 0 left, for a minute
        assert ask(gw, session="r2").served_by == "beta/m1"
        reset = httpx.post(
            gw.url + "/admin/health/reset", headers=gw.admin_headers(), json={"route": "alpha/m1"}
        )
        assert reset.status_code == 200
        row = next(r for r in admin(gw, "/admin/status")["ranking"] if r["route"] == "alpha/m1")
        assert not row.get("quota")
        before = len(ft.calls("alpha"))
        ask(gw, session="r3")  # alpha is tried first again (the sim's own window is still spent: its 429)
        assert len(ft.calls("alpha")) == before + 1
        assert not any("quota low" in w for w in plan_reasons(gw, "r3").get("alpha/m1", []))
