"""The ASGI app factory a worker process runs (uvicorn `--workers N`, or granian always; imported by name).

The supervisor (`modelpool serve`) has already checked the configuration and the bind, created the
admin token and set `MODELPOOL_CONFIG`, so every worker loads the same file and shares state through
the backend the configuration names (redis).
"""

from __future__ import annotations

import os
from typing import Any

from modelpool.config import load_config


def create_app() -> Any:
    from modelpool.gateway import Gateway
    from modelpool.logs import setup_logging

    loaded = load_config(None)
    level = os.environ.get("MODELPOOL_WORKER_LOG_LEVEL") or loaded.config.logging.level
    setup_logging(level, os.environ.get("MODELPOOL_WORKER_LOG_FORMAT") or loaded.config.logging.format)
    gw = Gateway(loaded)
    gw.settle_heap = True  # a server worker process: gc.freeze() after start-up (issue #21)
    return gw.asgi_app
