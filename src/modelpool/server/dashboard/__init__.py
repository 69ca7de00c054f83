"""The dashboard (SPEC §11): server-rendered shell + vanilla JS pages over the admin JSON API."""

from modelpool.server.dashboard.routes import dashboard_routes

__all__ = ["dashboard_routes"]
