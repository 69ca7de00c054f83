"""200 calls on a simulated 22-provider fleet with faults injected: a third of the routes fail 30 % of
their calls before any answer text (5xx, resets, rate limits, mid-stream errors after reasoning, cut or
malformed streams), one route sits behind a quota wall. Every call must succeed, and every answer must be
exactly the text of the route that served it: nothing lost, nothing duplicated, nothing spliced."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from routing_helpers import (
    EventWatcher,
    Reply,
    ask,
    client,
    config,
    fleet_of,
    quick_provider,
    route_row,
    wait_for,
)

from gateway_server import GatewayServer
from modelpool.sim import Fault, FleetThread, expected_text

NAMES = [
    "subconscious", "cerebras", "groq", "sambanova", "fireworks", "togetherai", "deepseek", "baseten",
    "deepinfra", "novita", "parasail", "bedrock", "vertex", "azure", "nebius", "lambda", "hyperbolic",
    "crusoe", "inference-net", "chutes", "friendli", "runinfra",
]  # fmt: skip
MODEL = "m1"
TOKENS = 8
# Failures before the commit point, in every shape the walk must absorb (after_tokens=0: no answer text).
FAULTS = [
    Fault("server_error", probability=0.3, status=503),
    Fault("reset", probability=0.3),
    Fault("rate_limit", probability=0.3, retry_after=0),
    Fault("error_event", probability=0.3),  # after the reasoning, before the answer
    Fault("cut", probability=0.3),
    Fault("malformed", probability=0.3),
    Fault("server_error", probability=0.3, status=500),
    Fault("reset", probability=0.3),
]
FAULTY = NAMES[::3]  # 8 of 22 routes
QUOTA_WALL = "deepinfra"
CONVERSATIONS, TURNS = 50, 4
WORKERS = 8  # concurrent clients


def test_200_calls_on_a_faulty_22_route_fleet_all_succeed_without_duplicated_text(
    record_property: Callable[[str, object], None],
) -> None:
    assert len(NAMES) == 22 and len(FAULTY) == 8 and QUOTA_WALL not in FAULTY
    faults = dict(zip(FAULTY, FAULTS, strict=True))
    providers = [
        quick_provider(
            name,
            tokens=TOKENS,
            reasoning=2,
            faults=[faults[name]] if name in faults else [Fault("quota")] if name == QUOTA_WALL else [],
        )
        for name in NAMES
    ]
    with (
        fleet_of(*providers) as ft,
        GatewayServer(config(ft, strategy="round-robin", retries_per_route=2, max_attempts=4)) as gw,
        EventWatcher(gw) as watcher,
    ):
        sdk = client(gw)

        def conversation(n: int) -> list[Reply]:
            return [ask(gw, session=f"chat-{n}", stream=(n + t) % 2 == 0, sdk=sdk) for t in range(TURNS)]

        with ThreadPoolExecutor(WORKERS) as pool:
            replies = [r for turns in pool.map(conversation, range(CONVERSATIONS)) for r in turns]
        quota_row = route_row(gw, f"{QUOTA_WALL}/{MODEL}")
        events = gw.gateway.events.recent(500)
        # the live watcher (the dashboard's view) received every switch and failure as it happened
        # (`served` events go to live watchers only, never to the replay buffer)
        kept = lambda: [e for e in watcher.events if e["type"] != "served"]  # noqa: E731
        wait_for(lambda: len(kept()) == len(events), what="every event over SSE")

    # zero failed calls (an exception above would have failed the test) and zero duplicated text
    assert len(replies) == CONVERSATIONS * TURNS == 200
    bad = [r for r in replies if r.text != expected_text(r.served_by.split("/")[0], MODEL, TOKENS)]
    assert bad == []

    figures = _figures(ft, replies, watcher.events)
    print("\n" + _render(figures))  # shown with `pytest -s`
    for key in ("calls", "attempts", "retries", "switches", "faults_fired", "served"):
        record_property(key, figures[key])  # and kept in `--junitxml` reports
    # every upstream request the fleet saw is an attempt some call reported: none hidden, none invented
    assert figures["attempts"] == sum(u["calls"] for u in figures["upstream"].values())
    # the faults really fired and were absorbed by retries and switches, not by luck
    assert figures["faults_fired"] >= 10
    assert figures["retries"] > 0 and figures["switches"] > 0
    # the quota wall served nothing and rests for the day. Every request it got was one walk's single
    # try, switched away at once (never retried); only calls already under way when the first one learned
    # of the wall can have hit it too — at most one per concurrent client.
    walled = [e for e in events if e["type"] == "failure" and e["route"] == f"{QUOTA_WALL}/{MODEL}"]
    assert walled and {e["kind"] for e in walled} == {"quota"}
    left_wall = [
        e["session"] for e in events if e["type"] == "switch" and e["from"] == f"{QUOTA_WALL}/{MODEL}"
    ]
    assert len(ft.calls(QUOTA_WALL)) == len(walled) == len(left_wall) == len(set(left_wall)) <= WORKERS
    assert figures["served"].get(f"{QUOTA_WALL}/{MODEL}", 0) == 0
    assert quota_row["mark"] == "QUOTA-REST"


def _figures(ft: FleetThread, replies: list[Reply], events: list[dict[str, Any]]) -> dict[str, Any]:
    switches = [e for e in events if e["type"] == "switch"]
    attempts = sum(r.attempts for r in replies)
    upstream = {}
    for name in NAMES:
        calls = ft.calls(name)
        upstream[name] = {
            "calls": len(calls),
            "faults": sum(1 for c in calls if c.fault is not None),
        }
    return {
        "calls": len(replies),
        "streamed": sum(1 for r in replies if r.meta is not None),
        "attempts": attempts,
        "switches": len(switches),
        "retries": attempts - len(replies) - len(switches),
        "switch_kinds": dict(Counter(e["kind"] for e in switches)),
        "switched_after_headers": sum(1 for r in replies if r.meta is not None and r.route != r.served_by),
        "faults_fired": sum(u["faults"] for u in upstream.values()),
        "served": dict(Counter(r.served_by for r in replies)),
        "upstream": upstream,
    }


def _render(f: dict[str, Any]) -> str:
    lines = [
        f"calls {f['calls']} (streamed {f['streamed']}), failed 0, duplicated text 0",
        f"upstream attempts {f['attempts']}: retries {f['retries']}, switches {f['switches']} "
        f"{f['switch_kinds']}, switched after headers (reasoning only) {f['switched_after_headers']}",
        f"faults fired {f['faults_fired']}",
        "route            served  upstream  faults",
    ]
    for name in NAMES:
        up = f["upstream"][name]
        mark = " (faulty)" if name in FAULTY else " (quota wall)" if name == QUOTA_WALL else ""
        served = f["served"].get(f"{name}/{MODEL}", 0)
        lines.append(f"{name:<16} {served:>6}  {up['calls']:>8}  {up['faults']:>6}{mark}")
    return "\n".join(lines)
