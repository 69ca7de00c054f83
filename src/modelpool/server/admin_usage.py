"""`GET /admin/usage`, `GET /admin/keys`, `GET /admin/prices` (SPEC §14): spend by pool, route, key or day,
client keys by name with their limits and spend, and every route's prices in force."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from modelpool.server.admin_guard import guard, json_response
from modelpool.usage import GROUPS

if TYPE_CHECKING:
    from modelpool.engine import Engine


def _day(value: str | None, name: str) -> str | None:
    """An ISO date or date-time as its UTC day; a bad value is the caller's 400."""
    if not value:
        return None
    try:
        if len(value) == 10:
            return date.fromisoformat(value).isoformat()
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{name}: not an ISO 8601 date or time: {value!r}") from None
    if dt.tzinfo is not None:
        dt = dt.astimezone(UTC)
    return dt.date().isoformat()


async def usage(gw: Engine, request: Request) -> Response:
    q = request.query_params
    by = q.get("group_by", "pool")
    if by not in GROUPS:
        raise ValueError(f"group_by must be one of {', '.join(GROUPS)}, got {by!r}")
    report = await gw.accounts.usage.report(by, _day(q.get("since"), "since"), _day(q.get("until"), "until"))
    return json_response(report)


async def keys(gw: Engine, request: Request) -> Response:
    return json_response({"keys": await gw.accounts.key_report()})


async def prices(gw: Engine, request: Request) -> Response:
    return json_response({"routes": gw.runtime.prices().describe(gw.clock())})


def usage_routes() -> list[Route]:
    return [
        Route("/admin/usage", guard(usage), methods=["GET"]),
        Route("/admin/keys", guard(keys), methods=["GET"]),
        Route("/admin/prices", guard(prices), methods=["GET"]),
    ]
