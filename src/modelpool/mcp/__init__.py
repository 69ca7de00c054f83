"""modelpool's MCP server (issue #12): agent tools to read status, probe, pin, rank and read the period.

One tool layer (`modelpool.mcp.tools`) talks to the admin API through an `AdminClient`; two transports use it:
stdio (`modelpool mcp`, HTTP to a running gateway) and streamable HTTP at the gateway's `/mcp` (in process).
The `mcp` SDK is imported only when a transport starts, so the gateway and the CLI stay fast to load.
"""

from __future__ import annotations

from modelpool.mcp.client import AdminClient, AdminError, AsgiAdminClient, HttpAdminClient

__all__ = ["AdminClient", "AdminError", "AsgiAdminClient", "HttpAdminClient"]
