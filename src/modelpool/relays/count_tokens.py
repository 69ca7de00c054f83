"""`POST /v1/messages/count_tokens` and Gemini's `:countTokens` (SPEC §1.1, §1.6): the count of a route that
speaks the client's dialect, natively.

The routes of the call's pool that speak Anthropic are asked in plan order, with the body as the client
sent it (the route's model id in place) and the client's dialect headers; the first answer reaches the
client unchanged. Only when no route speaks Messages, or none answered, is the count an estimate
(`x-modelpool-estimate: true`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any

import aiohttp
import orjson

from modelpool.protocols import anthropic as an
from modelpool.relays.request import forwarded_headers
from modelpool.routing.call import Candidate
from modelpool.upstream.client import AttemptFailure, UpstreamClient

COUNT_TIMEOUT = 30.0


async def count_tokens(
    client: UpstreamClient,
    candidates: Iterable[Candidate],
    body: dict[str, Any],
    client_headers: Mapping[str, str],
    patterns: list[str],
) -> tuple[int, bytes, list[tuple[bytes, bytes]]]:
    """(status, body, headers) of the count: a route's own answer, else the estimate."""
    forwarded = forwarded_headers(client_headers, patterns)
    for cand in candidates:
        if not cand.endpoint.speaks("anthropic"):
            continue
        answer = await _ask(client, cand, body, forwarded)
        if answer is not None:
            return 200, answer, [(b"x-modelpool-route", cand.key.encode())]
    estimate = orjson.dumps({"input_tokens": an.count_tokens_estimate(body)})
    return 200, estimate, [(b"x-modelpool-estimate", b"true")]


async def _ask(
    client: UpstreamClient, cand: Candidate, body: dict[str, Any], forwarded: tuple[tuple[str, str], ...]
) -> bytes | None:
    names = {n for n, _ in forwarded}
    headers = (*(h for h in cand.endpoint.headers_for("anthropic") if h[0].lower() not in names), *forwarded)
    try:
        payload = orjson.dumps({**body, "model": cand.route.model_id})
    except orjson.JSONEncodeError:
        return None  # nested deeper than orjson encodes (254): no route can take it; the estimate answers
    try:
        async with asyncio.timeout(COUNT_TIMEOUT):
            resp = await client.post(cand.endpoint.count_tokens_url, headers, payload)
            try:
                raw = await resp.read()
            finally:
                resp.release()
    except (AttemptFailure, TimeoutError, aiohttp.ClientError, ConnectionError):
        return None  # a route that cannot count (or is down) is no reason to fail: the next, or the estimate
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return raw if isinstance(obj, dict) and isinstance(obj.get("input_tokens"), int) else None


async def count_gemini(
    client: UpstreamClient,
    candidates: Iterable[Candidate],
    raw: bytes,
    estimate: int,
    client_headers: Mapping[str, str],
    patterns: list[str],
) -> tuple[int, bytes, list[tuple[bytes, bytes]]]:
    """Gemini's `:countTokens`: the first route that speaks the Gemini API counts the body as the client sent
    it (`{contents}` or `{generateContentRequest}`; the model is in the URL); else `estimate`."""
    forwarded = forwarded_headers(client_headers, patterns)
    names = {n for n, _ in forwarded}
    for cand in candidates:
        if not cand.endpoint.speaks("gemini"):
            continue
        headers = (*(h for h in cand.endpoint.headers_for("gemini") if h[0].lower() not in names), *forwarded)
        url = f"{cand.endpoint.root_for('gemini')}/models/{cand.route.model_id}:countTokens"
        answer = await _post(client, url, headers, raw)
        if answer is not None and isinstance(answer[1].get("totalTokens"), int):
            return 200, answer[0], [(b"x-modelpool-route", cand.key.encode())]
    return 200, orjson.dumps({"totalTokens": estimate}), [(b"x-modelpool-estimate", b"true")]


async def _post(
    client: UpstreamClient, url: str, headers: tuple[tuple[str, str], ...], payload: bytes
) -> tuple[bytes, dict[str, Any]] | None:
    try:
        async with asyncio.timeout(COUNT_TIMEOUT):
            resp = await client.post(url, headers, payload)
            try:
                raw = await resp.read()
            finally:
                resp.release()
    except (AttemptFailure, TimeoutError, aiohttp.ClientError, ConnectionError):
        return None
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return (raw, obj) if isinstance(obj, dict) else None
