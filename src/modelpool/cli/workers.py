"""`modelpool serve --workers N`: N worker processes on one port, sharing state through Redis.

Several processes only behave as one gateway when health, rests, pins, cursors and the dashboard layer
are shared, so N > 1 requires `state.backend: redis`. SQLite is refused: each worker would route on its
own memory and overwrite the others' rows in the file (a quota wall found by one worker would be hit
again by every other), and `memory` shares nothing at all.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
from typing import Any

from modelpool.cli import http_server
from modelpool.config import state_dir

log = logging.getLogger("modelpool")

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def serve_workers(
    loaded: Any,
    host: str,
    port: int,
    workers: int,
    log_level: str,
    log_format: str | None = None,
    stack: str = "uvicorn",
) -> int:
    config = loaded.config
    if config.state.backend != "redis":
        print(
            f"--workers {workers} needs shared state: set `state.backend: redis` (and `state.redis_url`).\n"
            f"The {config.state.backend} backend keeps each worker's health, rests and pins to itself, so "
            "a quota wall found by one worker would be hit again by every other. Use --workers 1 with "
            f"{config.state.backend}, or run several workers/replicas against one Redis.",
            file=sys.stderr,
        )
        return 2
    if loaded.path is None:
        print("--workers needs a configuration file (each worker process loads it)", file=sys.stderr)
        return 2
    # Workers set up logging as this process did and load the same file (`cli.worker_app`).
    http_server.worker_env(loaded, log_level, log_format)
    if not config.server.admin_token:
        # Created once here: N workers racing to create it would each print and keep a different one.
        from modelpool.security import load_or_create_admin_token

        token, created = load_or_create_admin_token(state_dir(config))
        if created:
            log.warning("generated admin token %s (stored in %s)", token, state_dir(config) / "admin_token")
    metrics_dir = _metrics_dir()
    try:
        log.info("modelpool: %d %s workers on http://%s:%d (shared state: redis)", workers, stack, host, port)
        if stack == "granian":
            http_server.run_granian(host, port, log_level, workers)
        else:
            http_server.run_uvicorn(None, host, port, log_level, workers)
        return 0
    finally:
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)


def _metrics_dir() -> str | None:
    """A fresh directory for prometheus_client's multiprocess mode, unless the operator set one:
    /metrics then aggregates every worker's samples instead of showing whichever worker answered."""
    if os.environ.get(MULTIPROC_ENV):
        return None
    path = tempfile.mkdtemp(prefix="modelpool-metrics-")
    os.environ[MULTIPROC_ENV] = path
    return path
