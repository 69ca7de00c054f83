"""The dashboard's HTTP face (SPEC §11): the app shell at `/`, token login/logout, and static files.

No build step: the shell is plain HTML, CSS and ES modules under `static/`, served as they are in the
package. Everything the pages show comes from the admin JSON API, which checks the token on every call;
the shell itself holds no data, so `/` answers the login page until the `modelpool_admin` cookie is set.

The cookie is HttpOnly (scripts never see the token) and SameSite=Strict (another site cannot make the
browser send it, which is what keeps cookie-authenticated admin POSTs safe from cross-site requests).
"""

from __future__ import annotations

import hmac
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

import orjson
from starlette.requests import Request
from starlette.responses import FileResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from modelpool.server.admin_guard import admin_token_ok

if TYPE_CHECKING:
    from modelpool.engine import Engine

STATIC = Path(__file__).parent / "static"
COOKIE = "modelpool_admin"
COOKIE_MAX_AGE = 7 * 24 * 3600
# The pages load only their own files: no inline script, no third-party origin, no framing.
SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
    "cache-control": "no-store",
}


def _page(name: str, status: int = 200) -> Response:
    return FileResponse(STATIC / name, status_code=status, headers=SECURITY_HEADERS, media_type="text/html")


async def index(request: Request) -> Response:
    gw: Engine = request.app.state.gateway
    return _page("index.html" if admin_token_ok(gw, request) else "login.html")


async def _presented_token(request: Request) -> str:
    """The token from a plain HTML form (urlencoded) or a JSON body; no multipart dependency needed."""
    raw = await request.body()
    if request.headers.get("content-type", "").startswith("application/json"):
        data = orjson.loads(raw or b"{}")
        token = data.get("token") if isinstance(data, dict) else None
        return token if isinstance(token, str) else ""
    values = parse_qs(raw.decode("utf-8", "replace")).get("token", [""])
    return values[0]


async def login(request: Request) -> Response:
    gw: Engine = request.app.state.gateway
    token = gw.admin_token
    presented = (await _presented_token(request)).strip()
    if not token or not presented or not hmac.compare_digest(presented.encode(), token.encode()):
        return RedirectResponse("/?login=failed", status_code=303, headers=SECURITY_HEADERS)
    response = RedirectResponse("/", status_code=303, headers=SECURITY_HEADERS)
    secure = request.url.scheme == "https" or request.headers.get("x-forwarded-proto") == "https"
    response.set_cookie(
        COOKIE, token, max_age=COOKIE_MAX_AGE, path="/", httponly=True, samesite="strict", secure=secure
    )
    return response


async def logout(request: Request) -> Response:
    response = RedirectResponse("/", status_code=303, headers=SECURITY_HEADERS)
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
    return response


def dashboard_routes() -> list[BaseRoute]:
    """Mounted by `server.app`: `/`, `/login`, `/logout`, `/static/*` (StaticFiles refuses `..`)."""
    return [
        Route("/", index, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
        Mount("/static", app=StaticFiles(directory=STATIC), name="dashboard-static"),
    ]
