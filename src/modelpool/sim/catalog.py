"""What a simulated provider answers besides calls: its model list (and an aggregator's public catalog and
endpoint stats) and Messages `count_tokens`."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from modelpool.sim import anthropic_provider, openai_provider
from modelpool.sim.errors import Dialect, SimError, bad_request, not_found_model, unauthorized
from modelpool.sim.records import CallRecord
from modelpool.sim.request import parse_anthropic
from modelpool.sim.spec import SimProvider

_JSON = "application/json"


async def count_tokens(request: web.BaseRequest, rec: CallRecord) -> web.StreamResponse:
    """`POST /v1/messages/count_tokens`, recorded in `rec` like a call."""
    try:
        if rec.key_ok is False:
            raise unauthorized()
        rec.raw_body = await request.read()
        try:
            body = orjson.loads(rec.raw_body)
        except orjson.JSONDecodeError:
            raise bad_request("invalid JSON body") from None
        req = parse_anthropic({"max_tokens": 1, **body} if isinstance(body, dict) else body)
        rec.model, rec.body = req.model, body
    except SimError as err:
        rec.status, rec.outcome = err.status, f"http_{err.status}"
        return err.response("anthropic")
    return web.Response(body=anthropic_provider.count_tokens_body(req.prompt_tokens), content_type=_JSON)


def models(
    spec: SimProvider, aggregator: Any, key_ok: bool | None, dialect: Dialect, path: str
) -> web.StreamResponse:
    """`GET /v1/models[/{id}]` (and an aggregator's `/models/{id}/endpoints`, public like Vercel's)."""
    if aggregator is not None:
        if path == "/models":
            return web.Response(body=aggregator.models_body(), content_type=_JSON)
        if path.endswith("/endpoints"):
            model_id = path[len("/models/") : -len("/endpoints")]
            model = spec.model(model_id)
            if model is None:
                body = {"error": {"message": f"Model {model_id} not found", "type": "model_not_found"}}
                return web.Response(status=404, body=orjson.dumps(body), content_type=_JSON)
            return web.Response(body=aggregator.endpoints_body(model), content_type=_JSON)
    if key_ok is False:
        return unauthorized().response(dialect)
    if path != "/models":
        model = spec.model(path[len("/models/") :])
        if model is None:
            return not_found_model(path[len("/models/") :]).response(dialect)
        entry = {"id": model.id, "object": "model", "created": openai_provider.CREATED, "owned_by": spec.id}
        return web.Response(body=orjson.dumps(entry), content_type=_JSON)
    listing = (
        anthropic_provider.models_body(spec)
        if spec.kind == "anthropic"
        else openai_provider.models_body(spec)
    )
    return web.Response(body=listing, content_type=_JSON)
