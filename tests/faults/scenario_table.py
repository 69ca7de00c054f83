"""The fault scenarios of issue #10: what the primary route does, what the client must see, and what the
gateway must record. Roles: P is the pool's primary route (first in priority order), S its secondary.

The gateway under test runs with `retries_per_route: 1`, so a retryable failure costs one retry on the
same route before the walk switches; `quota` never retries.
"""

from __future__ import annotations

from dataclasses import dataclass

from modelpool.sim import Fault

TOKENS = 6  # every scripted reply is six answer tokens …
HUGE_TOKENS = 3_000  # … except the huge one (~0.7 MB of SSE; the SDKs' parsing, not the gateway, bounds it)
TRICKLE = 0.2  # seconds per token of the slow trickle (the gateway's idle timeout is 0.5 s)
SHORT_RETRY_AFTER = 1  # seconds; within the 10 s the walk will hold a caller
LONG_RETRY_AFTER = 120  # seconds; beyond it: switch, and the route rests at least this long
BOTH = ("openai", "anthropic")  # route kinds (the upstream dialect)
OPENAI = ("openai",)  # timing scenarios: one route kind keeps the suite fast (both relays still run)


@dataclass(frozen=True)
class Expect:
    """`outcome`: "ok" — a whole reply, exactly the served route's text; "cut" — the first `prefix` tokens
    of P's reply, then a detectable error and no success terminator; "error" — an HTTP error that names
    every route tried and its failure kind."""

    outcome: str
    served: str | None = "P"
    attempts: int | tuple[int, ...] | None = 1  # a tuple: one per call of a repeated scenario
    switched: str | None = None  # the failure kind in `x-modelpool-switched`, when the walk switched
    prefix: int = 0
    failures: tuple[tuple[str, str], ...] = ()  # (role, kind) the health registry believed, in order
    mark: str | None = None  # P's mark in /admin/status afterwards
    rest_at_least: float = 0.0  # P's rest (s), a lower bound
    calls: tuple[int, int] = (1, 0)  # upstream requests P and S received
    min_elapsed: float = 0.0  # the call took at least this long (a lower bound: never flaky)
    status: int = 200


@dataclass(frozen=True)
class Scenario:
    id: str
    stream: Expect
    once: Expect | None = None  # the non-streamed expectation when it differs
    primary: tuple[Fault, ...] = ()
    secondary: tuple[Fault, ...] = ()
    primary_down: bool = False  # P is off the network: connection refused
    huge: bool = False
    repeat: int = 1
    kinds: tuple[str, ...] = BOTH
    modes: tuple[bool, ...] = (False, True)  # streamed or not
    note: str = ""  # for docs/faults.md

    def expect(self, stream: bool) -> Expect:
        return self.stream if stream or self.once is None else self.once


def _switch(kind: str, attempts: int, calls: tuple[int, int], mark: str = "COOLDOWN", **kw: object) -> Expect:
    return Expect(
        "ok",
        "S",
        attempts,
        kind,
        failures=(("P", kind),),
        mark=mark,
        calls=calls,
        **kw,  # type: ignore[arg-type]
    )


SCENARIOS: list[Scenario] = [
    Scenario(
        "rate-limit-short-retry-after",
        Expect("ok", attempts=2, calls=(2, 0), min_elapsed=SHORT_RETRY_AFTER),
        primary=(Fault("rate_limit", times=1, retry_after=SHORT_RETRY_AFTER),),
        kinds=OPENAI,
        note=f"429 + Retry-After: {SHORT_RETRY_AFTER}: waits at least that long, retries P, answers",
    ),
    Scenario(
        "rate-limit-long-retry-after",
        _switch("rate-limit", 2, (1, 1), rest_at_least=LONG_RETRY_AFTER),
        primary=(Fault("rate_limit", retry_after=LONG_RETRY_AFTER),),
        note=f"429 + Retry-After: {LONG_RETRY_AFTER}: switches at once, P rests ≥ {LONG_RETRY_AFTER} s",
    ),
    Scenario(
        "500-burst",
        _switch("server", 3, (2, 1)),
        primary=(Fault("server_error", times=3),),
        note="three 500s: retry once on P, then switch to S",
    ),
    Scenario(
        "connection-refused",
        _switch("network", 3, (0, 1)),
        primary_down=True,
        note="P's port closed: retry once, switch to S",
    ),
    Scenario(
        "reset-before-headers",
        Expect("ok", attempts=2, calls=(2, 0)),
        primary=(Fault("reset", times=1),),
        note="TCP reset before any byte: one retry on P answers",
    ),
    Scenario(
        "first-byte-stall",
        Expect("ok", attempts=2, calls=(2, 0)),
        primary=(Fault("stall", times=1, delay=30),),
        kinds=OPENAI,
        note="no byte for 30 s: first_byte (stream) / response (non-stream) timeout, one retry on P answers",
    ),
    Scenario(
        "stall-before-content",
        Expect("ok", attempts=2, calls=(2, 0)),
        primary=(Fault("stall", times=1, delay=30, headers=True),),
        kinds=OPENAI,
        # A non-streamed reply has no bytes before its body: there it is the first-byte stall above.
        modes=(True,),
        note="headers and role chunk, then silence: first_byte timeout, one retry on P answers "
        "(stream only: without a stream it is the first-byte stall)",
    ),
    Scenario(
        "cut-after-content",
        Expect("cut", prefix=2, failures=(("P", "network"),), mark="COOLDOWN"),
        once=_switch("network", 3, (2, 1)),
        primary=(Fault("cut", after_tokens=2),),
        note="connection dropped after 2 tokens: the stream ends in an error (no terminator); a cut body is "
        "retried whole",
    ),
    Scenario(
        "malformed-before-commit",
        _switch("server", 3, (2, 1)),
        primary=(Fault("malformed", after_tokens=0),),
        note="a non-JSON chunk (a non-JSON body without a stream) before any answer text: retry, switch",
    ),
    Scenario(
        "malformed-after-commit",
        Expect("cut", prefix=2, failures=(("P", "server"),), mark="COOLDOWN"),
        once=_switch("server", 3, (2, 1)),
        primary=(Fault("malformed", after_tokens=2),),
        note="a non-JSON chunk after 2 tokens: the stream ends in an error (no terminator)",
    ),
    Scenario(
        "missing-terminator",
        Expect("cut", prefix=TOKENS, failures=(("P", "network"),), mark="COOLDOWN"),
        once=Expect("ok"),
        primary=(Fault("no_terminator"),),
        note="every token but no [DONE]/message_stop: an error, never a success (no non-stream twin)",
    ),
    Scenario(
        "flapping-primary",
        # requests to P: ok · fail, retry ok · fail, retry ok · fail, retry ok
        Expect("ok", attempts=(1, 2, 2, 2), calls=(7, 0)),
        primary=(Fault("server_error", every=2),),
        repeat=4,
        note="P fails every other request: each flap costs one retry on P, never a switch nor a rest",
    ),
    Scenario(
        "quota-wall",
        _switch("quota", 2, (1, 1), mark="QUOTA-REST"),
        primary=(Fault("quota"),),
        note="429 insufficient balance: no retry, switch; P rests until 03:00 the next day",
    ),
    Scenario(
        "auth-401",
        _switch("auth", 3, (2, 1)),
        primary=(Fault("auth"),),
        note="401 invalid key: retried once (SPEC §5), switch, P cools down",
    ),
    Scenario(
        "slow-trickle",
        Expect("ok", min_elapsed=TOKENS * TRICKLE),
        primary=(Fault("trickle", delay=TRICKLE),),
        kinds=OPENAI,
        note=f"one token every {TRICKLE} s for {TOKENS * TRICKLE:.1f} s with a 0.5 s idle timeout: never cut",
    ),
    Scenario(
        "huge-response",
        Expect("ok"),
        huge=True,
        note=f"{HUGE_TOKENS} tokens in one burst: whole and exact",
    ),
    Scenario(
        "all-routes-down",
        Expect(
            "error",
            served=None,
            attempts=None,
            failures=(("P", "network"), ("S", "server")),
            mark="COOLDOWN",
            calls=(0, 2),
            status=502,
        ),
        primary_down=True,
        secondary=(Fault("server_error"),),
        note="P refused, S 500: a 502 naming each route and its kind",
    ),
]
