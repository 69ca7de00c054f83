"""The ASGI app factory one `serve --workers N` worker process runs (uvicorn imports it by name).

The supervisor (`modelpool serve`) has already checked the configuration and the bind, created the
admin token and set `MODELPOOL_CONFIG`, so every worker loads the same file and shares state through
the backend the configuration names (redis).
"""

from __future__ import annotations

from typing import Any

from modelpool.config import load_config


def create_app() -> Any:
    from modelpool.gateway import Gateway

    return Gateway(load_config(None)).asgi_app
