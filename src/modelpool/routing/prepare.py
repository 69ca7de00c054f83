"""From a parsed client request to a `Call`: which pool, which session, and what the call needs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelpool.catalog import UnknownModel
from modelpool.protocols import openai_chat as oc
from modelpool.protocols.effort import read_effort
from modelpool.protocols.errors import ClientError
from modelpool.protocols.gemini import wire as gemini_wire
from modelpool.routing.call import Call
from modelpool.routing.session import session_id
from modelpool.runtime import Runtime


def prepare_call(rt: Runtime, ingress: str, body: dict[str, Any], headers: Mapping[str, str]) -> Call:
    """Resolve the pool (SPEC §2) and read the session (§8), purpose (§3.6), effort, images and tools (the
    size estimate is `Call.est_tokens`, computed when first read).

    Raises `ClientError`: 404 with the closest pool names for an unknown model, 400 for a bad forced route.
    """
    name = body["model"]
    forced = headers.get("x-modelpool-route")
    try:
        pool = rt.catalog.resolve(forced or name)
    except UnknownModel as exc:
        hint = f" — did you mean {', '.join(exc.suggestions)}?" if exc.suggestions else ""
        raise ClientError(
            404, f"model {name!r} is not served by any pool{hint}", type="not_found_error", param="model"
        ) from None
    if forced and forced not in rt.catalog.routes:
        raise ClientError(400, f"x-modelpool-route {forced!r} is not a route key", param="x-modelpool-route")
    purpose = headers.get("x-modelpool-purpose")
    return Call(
        named_pool=_named_pool(rt, name) if forced else None,
        ingress=ingress,
        body=body,
        stream=bool(body.get("stream")),
        pool=pool,
        requested_model=name,
        session_id=session_id(headers, body, pool.id),
        purpose=purpose if purpose and purpose in rt.config.pool.purposes else None,
        forced_route=forced,
        effort=read_effort(ingress, body),
        locale=headers.get("accept-language", "en")[:2].lower(),
        has_images=gemini_wire.has_images(body) if ingress == "gemini" else oc.has_images(body),
        has_tools=oc.has_tools(body),
        prompt_cache=rt.config.pool.prompt_cache == "auto",
        headers=headers,
    )


def _named_pool(rt: Runtime, name: str) -> str | None:
    """The pool the client's model names, for the books of a call whose route is forced (a name no pool
    answers to leaves the call under the forced route's own pool)."""
    try:
        return rt.catalog.resolve(name).id
    except UnknownModel:
        return None
