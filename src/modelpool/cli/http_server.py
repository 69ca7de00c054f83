"""The HTTP server under `modelpool serve`: uvicorn or granian (`server.http_server`, `--http-server`).

Both run the same ASGI app (`Gateway.asgi_app`) with the same promises, each checked by tests under
both servers (tests/ops/test_http_servers.py): a client that leaves mid-stream gets its upstream closed
(`http.disconnect` on receive, `server.asgi.DisconnectWatch`), a slow reader makes `send` wait instead of
the reply piling up in memory, `--workers N` shares one port, SIGTERM lets in-flight calls finish for up
to `GRACEFUL_SECONDS`. The figures and the choice of default: bench/RESULTS.md, docs/decisions.md.

granian runs in its multi-process mode (the supervisor stays in this process, each worker is a child
that builds the gateway through `cli.worker_app:create_app`), never its experimental embedded mode.
Both servers are imported only here and only when serving: `modelpool --help` stays fast.
"""

from __future__ import annotations

import logging
import os
from typing import Any

log = logging.getLogger("modelpool")

SERVERS = ("uvicorn", "granian")
GRACEFUL_SECONDS = 5  # in-flight calls get this long to finish after SIGTERM, under either server
# Connections the kernel queues before accept (uvicorn's default); granian also caps the requests one
# worker handles at once (`backpressure`, default backlog ÷ workers): the same number per worker, so
# 1,000 open streams fit in one worker as they do under uvicorn.
BACKLOG = 2048

WORKER_APP = "modelpool.cli.worker_app:create_app"
CONFIG_ENV = "MODELPOOL_CONFIG"
LOG_LEVEL_ENV, LOG_FORMAT_ENV = "MODELPOOL_WORKER_LOG_LEVEL", "MODELPOOL_WORKER_LOG_FORMAT"


def worker_env(loaded: Any, log_level: str, log_format: str | None) -> None:
    """What a worker process needs to build the same gateway: the config file and the logging flags."""
    if loaded.path is not None:
        os.environ[CONFIG_ENV] = str(loaded.path)
    os.environ[LOG_LEVEL_ENV] = log_level
    os.environ[LOG_FORMAT_ENV] = log_format or loaded.config.logging.format


def run_uvicorn(app: Any, host: str, port: int, log_level: str, workers: int = 1) -> None:
    """`app`: the ASGI app (one process), or None: `WORKER_APP` in `workers` processes."""
    import uvicorn

    uvicorn.run(
        app if app is not None else WORKER_APP,
        factory=app is None,
        workers=workers if app is None else None,
        host=host,
        port=port,
        loop="uvloop",
        http="httptools",
        ws="none",  # nothing here speaks WebSocket: and uvicorn then skips importing `websockets` (~45 ms)
        lifespan="on",
        log_level=log_level.lower(),
        log_config=None,  # uvicorn's loggers propagate to ours (JSON or text); no access log
        access_log=False,
        server_header=False,
        # Nothing reads the client address, so uvicorn's X-Forwarded-* rewriting would be one more ASGI
        # layer on every call for nothing (issue #9: the hot path carries no unused middleware).
        proxy_headers=False,
        timeout_graceful_shutdown=GRACEFUL_SECONDS,
        backlog=BACKLOG,
    )


def run_granian(host: str, port: int, log_level: str, workers: int = 1) -> None:
    """granian's supervisor in this process, `workers` child processes each running `WORKER_APP`
    (the caller has set `worker_env`)."""
    from granian.constants import HTTPModes, Interfaces, Loops, RuntimeModes, TaskImpl
    from granian.log import LogLevels
    from granian.server import Server

    # Measurement knobs (bench/RESULTS.md compares them), not settings: the Rust runtime's mode (mt | st)
    # and the task implementation (asyncio | rust, experimental in granian).
    runtime = os.environ.get("MODELPOOL_GRANIAN_RUNTIME", "auto")
    tasks = os.environ.get("MODELPOOL_GRANIAN_TASKS", "asyncio")
    if runtime == "embed" and workers == 1:
        _run_granian_embedded(host, port, log_level)
        return
    server = Server(
        WORKER_APP,
        runtime_mode=RuntimeModes(runtime),
        task_impl=TaskImpl(tasks),
        factory=True,
        address=host,
        port=port,
        interface=Interfaces.ASGI,  # with lifespan: the gateway starts and flushes its state there
        workers=workers,
        loop=Loops.uvloop,
        http=HTTPModes.http1,  # as uvicorn: no HTTP/2 sniffing on every connection
        websockets=False,  # nothing here speaks WebSocket
        backlog=BACKLOG,
        backpressure=BACKLOG,
        log_level=LogLevels(_granian_level(log_level)),
        log_dictconfig=_GRANIAN_LOGGING,
        log_access=False,
        # granian waits for every in-flight call on SIGTERM, however long; past this a worker is killed
        # (uvicorn cancels the calls instead and still runs the lifespan shutdown: see docs/decisions.md).
        workers_kill_timeout=GRACEFUL_SECONDS,
    )
    # granian's logging setup (above) closed our root handler: put ours back for the supervisor's lines.
    from modelpool.logs import setup_logging

    setup_logging(log_level, os.environ.get(LOG_FORMAT_ENV) or "auto")
    # Workers are forked (Linux): importing the gateway here once saves each worker the imports.
    import modelpool.gateway  # noqa: F401

    server.serve()


def _granian_level(level: str) -> str:
    level = level.lower()
    return level if level in ("critical", "error", "warning", "info", "debug") else "info"


# granian's own loggers print to stdout in their own format; send them to ours (JSON or text) instead.
_GRANIAN_LOGGING: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {},
    "handlers": {},
    "loggers": {
        "_granian": {"handlers": [], "propagate": True},
        "granian.access": {"handlers": [], "propagate": True},
    },
}


def _run_granian_embedded(host: str, port: int, log_level: str) -> None:
    """granian's embedded (in-process, "experimental") server: only a measurement knob, to compare."""
    import asyncio
    import signal

    import uvloop
    from granian.constants import HTTPModes, Interfaces
    from granian.log import LogLevels
    from granian.server.embed import Server

    from modelpool.cli.worker_app import create_app

    async def main() -> None:
        server = Server(
            create_app(),
            address=host,
            port=port,
            interface=Interfaces.ASGI,
            http=HTTPModes.http1,
            websockets=False,
            backlog=BACKLOG,
            backpressure=BACKLOG,
            log_level=LogLevels(_granian_level(log_level)),
            log_dictconfig=_GRANIAN_LOGGING,
        )
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, server.stop)
        await server.serve()

    uvloop.run(main())
