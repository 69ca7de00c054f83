"""The admin API's OpenAPI 3 document, served at `GET /admin/openapi.json` (issue #10).

Hand-written rather than derived: the admin handlers read plain JSON bodies (no pydantic models per
route), so the request schemas below *are* the contract each handler checks by hand. They describe what
a well-formed request looks like; anything else must still be answered 4xx, never 5xx — which is what
schemathesis checks against a live gateway (tests/faults/test_openapi_fuzz.py, bench/fuzz.py).

The document is behind the admin token like every other admin route: it holds nothing secret, but a
public page listing the admin surface would be one more thing to reason about, and every client of the
document (the CLI, schemathesis, a human with curl) already holds the token.

`tests/faults/test_openapi_doc.py` checks that every `/admin/*` route of the app appears here with the
same methods, so a new route without a description fails the suite.
"""

from __future__ import annotations

import copy
from typing import Any

from modelpool import __version__

_STR: dict[str, Any] = {"type": "string"}
_OBJ: dict[str, Any] = {"type": "object"}
_STR_LIST: dict[str, Any] = {"type": "array", "items": _STR}
_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["message", "type"],
            "properties": {"message": _STR, "type": _STR},
        }
    },
}
_GROUP = {
    "type": "object",
    "required": ["id", "models"],
    "properties": {
        "id": {"type": "string", "minLength": 1},
        "name": {"type": "string", "nullable": True},
        "models": {"type": "array", "items": _STR, "minItems": 1},
        "merge": {"type": "boolean"},
    },
}


def _body(schema: dict[str, Any], required: bool = False) -> dict[str, Any]:
    return {"required": required, "content": {"application/json": {"schema": schema}}}


def _obj(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    return out


def _path_param(name: str, description: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": _STR, "description": description}


def _query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}


def _op(
    summary: str,
    body: dict[str, Any] | None = None,
    params: list[dict[str, Any]] | None = None,
    media: str = "application/json",
    not_found: bool = False,
) -> dict[str, Any]:
    responses: dict[str, Any] = {
        "200": {
            "description": "OK",
            "content": {media: {"schema": _OBJ if media.endswith("json") else _STR}},
        },
        "400": {"description": "Bad request", "content": {"application/json": {"schema": _ERROR}}},
        "401": {
            "description": "Admin token missing or wrong",
            "content": {"application/json": {"schema": _ERROR}},
        },
    }
    if not_found:
        responses["404"] = {"description": "Not found", "content": {"application/json": {"schema": _ERROR}}}
    op: dict[str, Any] = {"summary": summary, "responses": responses}
    if body is not None:
        op["requestBody"] = body
    if params:
        op["parameters"] = params
    return op


def _paths() -> dict[str, Any]:
    pin = _obj({"pool": _STR, "route": _STR, "clear": {"type": "boolean"}})
    probe = _obj(
        {
            "models": _STR_LIST,
            "max_requests": {"type": "integer", "minimum": 0, "maximum": 64},
            "timeout": {"type": "number", "exclusiveMinimum": True, "minimum": 0, "maximum": 120},
        }
    )
    switch = _obj(
        {
            "key": _STR,
            "enabled": {"type": "boolean"},
            "scope": {"type": "string", "enum": ["model", "provider"]},
        },
        ["key", "enabled"],
    )
    order = _obj(
        {
            "key": {
                "type": "string",
                "enum": ["pool.provider_order", "peak.peak_provider_order", "peak.off_peak_provider_order"],
            },
            "order": _STR_LIST,
        },
        ["key", "order"],
    )
    return {
        "/admin/openapi.json": {"get": _op("This document")},
        "/admin/status": {"get": _op("Routes, rests, settings in force, state backend")},
        "/admin/pools": {"get": _op("Pools and their routes")},
        "/admin/health/reset": {
            "post": _op("Clear one route's (or every route's) health", _body(_obj({"route": _STR})))
        },
        "/admin/settings": {
            "get": _op("Every setting with the layer it comes from"),
            "patch": _op(
                "Set dashboard-layer settings (dotted keys; null removes a key)",
                _body({"type": "object", "additionalProperties": True}, required=True),
            ),
        },
        "/admin/discover": {"post": _op("Re-read every provider's model list")},
        "/admin/calendar": {"get": _op("Holiday calendar status")},
        "/admin/calendar/sync": {"post": _op("Fetch the holiday calendar now")},
        "/admin/period": {
            "get": _op(
                "Peak or idle at a time, and why",
                params=[
                    _query("at", {"type": "string", "format": "date-time"}, "ISO 8601 time (default now)")
                ],
            )
        },
        "/admin/sessions": {
            "get": _op(
                "Sessions, most recently active first: live route, calls, tokens and cost so far",
                params=[_query("limit", {"type": "integer", "minimum": 1}, "sessions listed (default 500)")],
            )
        },
        "/admin/sessions/{sid}": {
            "get": _op(
                "One session's calls (route, attempts, switches, hedge, tokens, cost, TTFT, latency, "
                "outcome), summary, live route, last plan and pins",
                params=[_path_param("sid", "session id")],
                not_found=True,
            )
        },
        "/admin/pin": {"post": _op("Set or clear a pool's operator pin", _body(pin, required=True))},
        "/admin/pins": {"get": _op("Operator pins")},
        "/admin/questions": {"get": _op("Pending switch questions")},
        "/admin/questions/{qid}": {
            "post": _op(
                "Answer a switch question",
                _body(_obj({"answer": {"type": "string", "minLength": 1}}, ["answer"]), required=True),
                params=[_path_param("qid", "question id")],
                not_found=True,
            )
        },
        "/admin/probe": {
            "post": _op("Send a one-token probe to routes", _body(probe, required=True), not_found=True)
        },
        "/admin/events": {
            "get": _op(
                "Server-sent events: switches, rests, questions (never ends)",
                params=[
                    _query("replay", {"type": "integer", "minimum": 0}, "replay this many recent events")
                ],
                media="text/event-stream",
            )
        },
        "/admin/ranking/refresh": {
            "post": _op("Drop cached aggregator stats", _body(_obj({"model": _STR})), not_found=True)
        },
        "/admin/ranking/{model}": {
            "get": _op(
                "Aggregator ranking of a model",
                params=[
                    _path_param("model", "pool id, route key or aggregator model id"),
                    _query("refresh", {"type": "string", "enum": ["1", "true", "yes"]}, "fetch fresh stats"),
                    _query("session", _STR, "session whose affinity to report"),
                ],
                not_found=True,
            )
        },
        "/admin/models": {
            "get": _op("The roster: channels, rows, switch lists"),
            "post": _op("Switch a row or a channel on or off", _body(switch, required=True)),
        },
        "/admin/usage": {
            "get": _op(
                "Calls, tokens and cost summed by pool, route, client key or day (SPEC §14)",
                params=[
                    _query(
                        "group_by", {"type": "string", "enum": ["pool", "route", "key", "day"]}, "grouping"
                    ),
                    _query("since", {"type": "string"}, "ISO 8601 date or time (UTC day, inclusive)"),
                    _query("until", {"type": "string"}, "ISO 8601 date or time (UTC day, inclusive)"),
                ],
            )
        },
        "/admin/keys": {"get": _op("Client keys by name or short hash, with limits and spend")},
        "/admin/prices": {"get": _op("Every route's prices and the price in force now")},
        "/admin/providers": {"get": _op("Providers and the three provider rankings")},
        "/admin/providers/order": {"post": _op("Save one provider ranking", _body(order, required=True))},
        "/admin/groups": {
            "get": _op("Model groups"),
            "put": _op(
                "Replace the model groups (null hands them back to the file)",
                _body(
                    _obj({"groups": {"type": "array", "items": _GROUP, "nullable": True}}, ["groups"]),
                    required=True,
                ),
            ),
        },
    }


def openapi_document() -> dict[str, Any]:
    # Deep-copied: the schema fragments above are shared between operations, and a consumer that edits
    # the document in place (schema tools do) must not change the next one served.
    return copy.deepcopy(
        {
            "openapi": "3.0.3",
            "info": {
                "title": "modelpool admin API",
                "version": __version__,
                "description": "Every route needs the admin token (Authorization: Bearer, "
                "x-admin-token, or the dashboard's modelpool_admin cookie).",
            },
            "components": {"securitySchemes": {"adminToken": {"type": "http", "scheme": "bearer"}}},
            "security": [{"adminToken": []}],
            "paths": _paths(),
        }
    )
