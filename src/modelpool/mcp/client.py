"""How the MCP tools reach the admin API: over HTTP (stdio transport) or in process (the gateway's `/mcp`).

Both implementations send the same requests to the same admin endpoints, so a tool's answer is the admin
API's answer (same validation, same errors) whichever transport carried it.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable
from typing import Any

import orjson


class AdminError(Exception):
    """The admin API refused or failed a request; the message is meant for the agent to read."""


class AdminClient:
    """An async admin API client; subclasses implement `_send`."""

    async def request(
        self, method: str, path: str, body: Any = None, query: dict[str, str] | None = None
    ) -> Any:
        if query:
            path = path + "?" + urllib.parse.urlencode(query)
        data = orjson.dumps(body) if body is not None else None
        status, payload = await self._send(method, path, data)
        try:
            decoded = orjson.loads(payload) if payload else None
        except orjson.JSONDecodeError:
            decoded = None
        if status >= 400:
            raise AdminError(_error_message(method, path, status, decoded, payload))
        return decoded

    async def get(self, path: str, query: dict[str, str] | None = None) -> Any:
        return await self.request("GET", path, query=query)

    async def post(self, path: str, body: Any) -> Any:
        return await self.request("POST", path, body=body)

    async def close(self) -> None:
        return None

    async def _send(self, method: str, path: str, data: bytes | None) -> tuple[int, bytes]:
        raise NotImplementedError


def _error_message(method: str, path: str, status: int, decoded: Any, raw: bytes) -> str:
    if isinstance(decoded, dict) and isinstance(decoded.get("error"), dict):
        message = str(decoded["error"].get("message") or "")
        errors = decoded["error"].get("errors")
        if errors:
            message += ": " + "; ".join(str(e) for e in errors)
    else:
        message = raw.decode("utf-8", "replace")[:500]
    return f"{method} {path.split('?')[0]} → HTTP {status}: {message}"


class HttpAdminClient(AdminClient):
    """The admin API of a running gateway at `base_url`, over HTTP (aiohttp)."""

    def __init__(self, base_url: str, token: str | None, timeout: float = 180.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self._session: Any = None

    async def _send(self, method: str, path: str, data: bytes | None) -> tuple[int, bytes]:
        import aiohttp

        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout))
        headers = {"Content-Type": "application/json"} if data is not None else {}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            async with self._session.request(method, self.base_url + path, data=data, headers=headers) as r:
                return r.status, await r.read()
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise AdminError(
                f"cannot reach the gateway at {self.base_url} ({exc or type(exc).__name__}); "
                "is `modelpool serve` running? (modelpool mcp --url)"
            ) from None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


class AsgiAdminClient(AdminClient):
    """The admin API of the gateway this process serves, called through its own ASGI app (no socket)."""

    def __init__(self, app: Any, token: Callable[[], str | None]) -> None:
        self.app = app  # the gateway's admin ASGI app
        self.token = token

    async def _send(self, method: str, path: str, data: bytes | None) -> tuple[int, bytes]:
        raw_path, _, query = path.partition("?")
        headers = [(b"host", b"modelpool"), (b"content-type", b"application/json")]
        token = self.token()
        if token:
            headers.append((b"authorization", b"Bearer " + token.encode()))
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": urllib.parse.unquote(raw_path),
            "raw_path": raw_path.encode(),
            "query_string": query.encode(),
            "root_path": "",
            "headers": headers,
            "client": ("127.0.0.1", 0),
            "server": ("modelpool", 80),
        }
        sent = False
        status = 500
        chunks: list[bytes] = []

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": data or b"", "more_body": False}
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.app(scope, receive, send)
        return status, b"".join(chunks)
