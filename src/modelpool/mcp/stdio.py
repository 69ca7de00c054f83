"""`modelpool mcp`: the MCP server over stdio, talking to a running gateway's admin API over HTTP."""

from __future__ import annotations

import asyncio

from modelpool.mcp.client import HttpAdminClient


async def serve_stdio(url: str, token: str | None) -> None:
    from modelpool.mcp.tools import build_server

    client = HttpAdminClient(url, token)
    try:
        await build_server(client).run_stdio_async()
    finally:
        await client.close()


def run_stdio(url: str, token: str | None) -> None:
    asyncio.run(serve_stdio(url, token))
