"""The floor: the least a Python relay on this stack can do (uvicorn + uvloop + httptools, aiohttp, orjson).

Raw ASGI, one upstream, no routing, no inspection, no failover: the request body is forwarded to the
same path under the upstream's API root (`/v1/chat/completions`, `/v1/messages`, `/v1/responses`: the
floor of every dialect's native relay), the response's bytes go back as they arrive.
`overhead.py --with-floor` runs it as one more target, so every
run shows which part of the gateway's added latency is the server stack itself and which part is ours.

    python bench/harness/floor_relay.py UPSTREAM_API_ROOT PORT [uvicorn|granian]   # e.g. http://127.0.0.1:9001/v1

The third argument picks the HTTP server (default uvicorn); granian runs as `modelpool serve` runs it
(one worker process, uvloop, HTTP/1), so `--floor-server granian` separates the server stack's cost.
"""

from __future__ import annotations

import sys
from typing import Any

import aiohttp

UPSTREAM = (sys.argv[1] if len(sys.argv) > 1 else "").rstrip("/")
_session: aiohttp.ClientSession | None = None


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    global _session
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    if scope["path"] == "/readyz":
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})
        return
    body = b""
    more = True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    if _session is None:
        _session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
    path = scope["path"]  # the Gemini API's root is `/v1beta`, next to the upstream's `/v1`
    url = (
        UPSTREAM.removesuffix("/v1") + path
        if path.startswith("/v1beta/")
        else UPSTREAM + path.removeprefix("/v1")
    )
    if scope.get("query_string"):
        url += "?" + scope["query_string"].decode("latin-1")
    async with _session.post(url, data=body, headers={"content-type": "application/json"}) as resp:
        ctype = resp.headers.get("content-type", "application/json")
        headers = [(b"content-type", ctype.encode())]
        if not ctype.startswith("text/event-stream"):
            data = await resp.read()
            headers.append((b"content-length", str(len(data)).encode()))
            await send({"type": "http.response.start", "status": resp.status, "headers": headers})
            await send({"type": "http.response.body", "body": data})
            return
        await send({"type": "http.response.start", "status": resp.status, "headers": headers})
        while chunk := await resp.content.readany():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
    await send({"type": "http.response.body", "body": b""})


if __name__ == "__main__":
    if (sys.argv[3] if len(sys.argv) > 3 else "uvicorn") == "granian":
        from granian.constants import HTTPModes, Interfaces, Loops
        from granian.server import Server

        Server(
            "floor_relay:app", address="127.0.0.1", port=int(sys.argv[2]), interface=Interfaces.ASGI,
            loop=Loops.uvloop, http=HTTPModes.http1, websockets=False, log_level="warning",
        ).serve()  # fmt: skip
    else:
        import uvicorn

        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning", access_log=False)
