"""Non-streamed native attempts: the route's answer is read whole and, when it is a reply of the client's
own dialect, reaches the client byte for byte (SPEC §1.6). Every failure is before the commit point."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import orjson

from modelpool.aggregators import RoutingRecord, find_routing
from modelpool.health.classify import FailureKind, classify
from modelpool.protocols.gemini.wire import usage_from_gemini
from modelpool.protocols.mapping import usage_from_anthropic, usage_from_openai
from modelpool.relays.reads import read_body
from modelpool.relays.request import Prepared
from modelpool.upstream.client import AttemptFailure, UpstreamClient
from modelpool.walk.walker import AttemptResult


def is_reply(dialect: str, obj: Any) -> bool:
    """A 200 is only a success when it is a reply object of its dialect (some upstreams 200 an error)."""
    if not isinstance(obj, dict) or obj.get("error"):
        return False
    if dialect == "anthropic":
        return obj.get("type") == "message" and isinstance(obj.get("content"), list)
    if dialect == "responses":
        return obj.get("object") == "response" and obj.get("status") not in ("failed", "cancelled")
    if dialect == "gemini":
        return isinstance(obj.get("candidates"), list)
    return isinstance(obj.get("choices"), list)


async def post_and_read(client: UpstreamClient, prep: Prepared) -> bytes:
    """One non-streamed upstream request: the body once it arrived whole (bounded by `response`)."""
    limits = prep.timeouts or client.timeouts  # the route's own (SPEC §3.9), resolved per runtime
    try:
        async with asyncio.timeout(limits.response):
            resp = await client.post(
                prep.url, prep.headers, prep.body, route=prep.route, connect=limits.connect
            )
            try:
                return await read_body(resp, limits.idle)
            finally:
                resp.close()
    except TimeoutError:
        message = f"timeout: no whole upstream answer within the response limit of {limits.response:g} s"
        raise AttemptFailure(FailureKind.NETWORK, message) from None
    except (aiohttp.ClientError, ConnectionError) as exc:
        raise AttemptFailure(FailureKind.NETWORK, f"{type(exc).__name__}: {exc}") from None


def normalized_usage(dialect: str, usage: Any) -> dict[str, int] | None:
    """A reply body's usage in `protocols.mapping`'s flat shape, whatever its dialect."""
    if dialect == "anthropic":
        return usage_from_anthropic(usage)
    if dialect == "gemini":
        return usage_from_gemini(usage)
    if dialect == "responses":
        from modelpool.relays.responses import usage_from_responses

        return usage_from_responses(usage)
    return usage_from_openai(usage)


def output_tokens(usage: Any) -> int | None:
    if not isinstance(usage, dict):
        return None
    tokens = usage.get("completion_tokens", usage.get("output_tokens"))
    return tokens if isinstance(tokens, int) else None


def once_result(t0: float, usage: Any) -> AttemptResult:
    elapsed = time.monotonic() - t0
    tokens = output_tokens(usage)
    tps = tokens / elapsed if tokens is not None and tokens > 1 and elapsed > 0 else None
    return AttemptResult(ttft=elapsed, tokens_per_s=tps)


class NativeOnce:
    """The served native attempt's body, kept as bytes."""

    def __init__(self, client: UpstreamClient) -> None:
        self.client = client
        self.routing: RoutingRecord | None = None
        self.body: bytes = b""
        self.obj: Any = None
        self.dialect = "openai"

    async def attempt(self, aggregator: bool, prep: Prepared) -> AttemptResult:
        t0 = time.monotonic()
        body = await post_and_read(self.client, prep)
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError:
            obj = None
        if not is_reply(prep.dialect, obj):
            raise bad_body(obj, body)
        self.body, self.obj, self.dialect = body, obj, prep.dialect
        # Only aggregators write routing records: a direct provider's body is not searched for one.
        self.routing = find_routing(obj) if aggregator else None
        if prep.dialect == "gemini":
            return once_result(t0, usage_from_gemini(obj.get("usageMetadata")))
        return once_result(t0, obj.get("usage"))

    @property
    def usage(self) -> Any:
        if not isinstance(self.obj, dict):
            return None
        return self.obj.get("usageMetadata" if self.dialect == "gemini" else "usage")


def bad_body(obj: Any, body: bytes) -> AttemptFailure:
    if isinstance(obj, dict) and obj.get("error"):
        err = obj["error"]
        message = err.get("message") if isinstance(err, dict) else None
        message = message if isinstance(message, str) else orjson.dumps(err).decode()
        kind = classify(None, message)
        return AttemptFailure(FailureKind.SERVER if kind is FailureKind.REQUEST else kind, message)
    return AttemptFailure(FailureKind.SERVER, f"upstream answered 200 without a reply: {body[:200]!r}")
