"""The admin surface's door (SPEC §12): the token check every `/admin/*` handler and the dashboard's pages
go through, and the JSON reply they all answer with."""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING, Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from modelpool.config import ConfigError

if TYPE_CHECKING:
    from modelpool.engine import Engine


def json_response(obj: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS), status, media_type="application/json")


def admin_token_ok(gw: Engine, request: Request) -> bool:
    token = gw.admin_token
    auth = request.headers.get("authorization", "")
    presented = auth.removeprefix("Bearer ").strip() or request.headers.get("x-admin-token", "")
    presented = presented or request.cookies.get("modelpool_admin", "")
    if not token:
        return False
    return hmac.compare_digest(presented.encode(), token.encode())


def guard(handler: Any) -> Any:
    async def endpoint(request: Request) -> Response:
        gw: Engine = request.app.state.gateway
        if not admin_token_ok(gw, request):
            return json_response(
                {"error": {"message": "admin token required", "type": "authentication_error"}}, 401
            )
        try:
            return await handler(gw, request)
        except ConfigError as err:
            return json_response(
                {"error": {"message": str(err), "type": "invalid_request_error", "errors": err.errors}}, 400
            )
        except (ValueError, KeyError, TypeError, orjson.JSONDecodeError) as err:
            return json_response(
                {"error": {"message": f"bad request: {err}", "type": "invalid_request_error"}}, 400
            )

    endpoint.__name__ = handler.__name__
    return endpoint
