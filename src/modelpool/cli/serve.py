"""`modelpool serve`: load the config, check the bind is safe, run uvicorn on the gateway's ASGI app."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from modelpool.config import ConfigError, load_config
from modelpool.security import is_loopback


def configure_logging(level: str, fmt: str = "auto") -> None:
    """JSON lines when stderr is not a terminal (or `fmt="json"`), text otherwise (`modelpool.logs`)."""
    from modelpool.logs import setup_logging

    setup_logging(level, fmt)


def run_serve(
    config: Path | None,
    host: str | None,
    port: int | None,
    workers: int,
    log_level: str | None,
    log_format: str | None = None,
) -> int:
    try:
        loaded = load_config(config)
    except ConfigError as err:
        print("invalid configuration:", file=sys.stderr)
        for line in err.errors:
            print(f"  {line}", file=sys.stderr)
        return 2
    # A flag wins over the config file's `logging` section.
    log_level = log_level or loaded.config.logging.level
    configure_logging(log_level, log_format or loaded.config.logging.format)
    for warning in loaded.warnings:
        logging.getLogger("modelpool").warning(warning)
    server = loaded.config.server
    bind_host = host or server.host
    bind_port = server.port if port is None else port
    if not is_loopback(bind_host) and not server.api_keys:
        print(
            f"refusing to bind {bind_host}: a non-loopback address requires client keys (server.api_keys)",
            file=sys.stderr,
        )
        return 2
    if workers < 1:
        print("--workers must be at least 1", file=sys.stderr)
        return 2
    if workers > 1:
        from modelpool.cli.workers import serve_workers

        return serve_workers(loaded, bind_host, bind_port, workers, log_level, log_format)
    return serve_loaded(loaded, bind_host, bind_port, log_level)


def serve_loaded(loaded, host: str, port: int, log_level: str) -> int:  # type: ignore[no-untyped-def]
    import uvicorn

    from modelpool.gateway import Gateway

    gw = Gateway(loaded)
    gw.settle_heap = True  # this process is the server: gc.freeze() after start-up (issue #21)
    logging.getLogger("modelpool").info(
        "modelpool %s on http://%s:%d — config %s", _version(), host, port, loaded.path or "(environment)"
    )
    uvicorn.run(
        gw.asgi_app,
        host=host,
        port=port,
        loop="uvloop",
        http="httptools",
        lifespan="on",
        log_level=log_level.lower(),
        log_config=None,  # uvicorn's loggers propagate to ours (JSON or text); no access log
        access_log=False,
        server_header=False,
        # Nothing reads the client address, so uvicorn's X-Forwarded-* rewriting would be one more ASGI
        # layer on every call for nothing (issue #9: the hot path carries no unused middleware).
        proxy_headers=False,
        timeout_graceful_shutdown=5,
    )
    return 0


def _version() -> str:
    from modelpool import __version__

    return __version__
