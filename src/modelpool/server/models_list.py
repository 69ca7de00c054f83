"""`GET /v1/models`, rendered once per runtime snapshot and shape (issues #21, #30).

The list only changes when the catalog does, and a new catalog always comes with a new `Runtime`. With
10,000 routes the body is ~250 KB and takes ~15 ms to build and encode; kept on the snapshot's memo, a
request costs a dict lookup, and a reload drops the old body with the old snapshot.

Shapes (SPEC §1.7): OpenAI's list with modelpool's fields for everyone; Anthropic's fields
(`display_name`, `max_input_tokens`, `max_tokens`, `type`, `created_at`) added for a client that sends
`anthropic-version`; and Codex's catalogue, `models: [ModelInfo…]` beside `data`, for a request with
`client_version` (what Codex sends to a provider's `model_catalog_url`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson

from modelpool.agents import codex
from modelpool.routing.windows import pool_windows

if TYPE_CHECKING:
    from modelpool.engine import Engine

_KEY = "server.models_body"


def models_body(gw: Engine, shape: str = "openai") -> bytes:
    """`shape`: "openai", "anthropic" or "codex"."""
    rt = gw.runtime
    body: bytes | None = rt.memo.get((_KEY, shape))
    if body is None:  # synchronous from here: `models_payload` reads this same snapshot
        body = orjson.dumps(models_payload(gw, shape))
        rt.memo[(_KEY, shape)] = body
    return body


def models_payload(gw: Engine, shape: str = "openai") -> dict[str, Any]:
    """OpenAI list shape with modelpool's extra fields per pool (SPEC §1.1)."""
    rt = gw.runtime
    data: list[dict[str, Any]] = []
    created = int(gw.started_at)
    for pool in rt.catalog.pools.values():
        caps = pool.capabilities
        row = {
            "id": pool.id,
            "object": "model",
            "created": created,
            "owned_by": "modelpool",
            "name": pool.name,
            "routes": [r.key for r in pool.routes],
            "context_window": caps.context_window,
            # What a client must size to: the smallest window of every route a call may reach, the
            # fallback chain's included (`pool.model_fallback`).
            "agent_context_window": pool_windows(rt, pool).smallest,
            "efforts": list(caps.efforts) if caps.efforts is not None else None,
            "input_modalities": list(caps.input_modalities)
            if caps.input_modalities is not None
            else ["text"],
            "tools": caps.tools,
        }
        if shape == "anthropic":
            row.update(
                type="model",
                display_name=pool.name,
                created_at=datetime.fromtimestamp(created, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                max_input_tokens=row["agent_context_window"],
                max_tokens=None,  # no route declares its output limit
            )
        data.append(row)
    payload: dict[str, Any] = {"object": "list", "data": data}
    if shape == "anthropic":
        ids = [r["id"] for r in data]
        payload.update(has_more=False, first_id=ids[0] if ids else None, last_id=ids[-1] if ids else None)
    if shape == "codex":
        payload["models"] = codex.catalogue(codex.shipped_template(), data)
    return payload
