"""`modelpool serve`: load the config, check the bind is safe, run the HTTP server (uvicorn or granian)."""

from __future__ import annotations

import importlib.util
import logging
import sys
from pathlib import Path

from modelpool.cli.http_server import SERVERS
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
    http_server: str | None = None,
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
    stack = http_server or server.http_server
    if stack not in SERVERS:
        print(f"--http-server must be one of {', '.join(SERVERS)}, not {stack!r}", file=sys.stderr)
        return 2
    if stack == "granian" and importlib.util.find_spec("granian") is None:
        print("--http-server granian needs granian: pip install 'modelpool[granian]'", file=sys.stderr)
        return 2
    if workers > 1:
        from modelpool.cli.workers import serve_workers

        return serve_workers(loaded, bind_host, bind_port, workers, log_level, log_format, stack)
    return serve_loaded(loaded, bind_host, bind_port, log_level, log_format, stack)


def serve_loaded(  # type: ignore[no-untyped-def]
    loaded, host: str, port: int, log_level: str, log_format: str | None = None, stack: str = "uvicorn"
) -> int:
    from modelpool.cli import http_server

    logging.getLogger("modelpool").info(
        "modelpool %s on http://%s:%d (%s) — config %s",
        _version(),
        host,
        port,
        stack,
        loaded.path or "(environment)",
    )
    from modelpool import fastscan

    if not fastscan.COMPILED:  # an install without a C compiler: the same scans, slower (README)
        logging.getLogger("modelpool").warning(
            "modelpool.fastscan runs in Python: the C extension was not built (install a C compiler, "
            "then pip install again); streams cost more CPU per chunk"
        )
    if stack == "granian":
        # One granian worker process builds the gateway from the same config (cli/http_server.py).
        http_server.worker_env(loaded, log_level, log_format)
        http_server.run_granian(host, port, log_level)
        return 0
    from modelpool.gateway import Gateway

    gw = Gateway(loaded)
    gw.settle_heap = True  # this process is the server: gc.freeze() after start-up (issue #21)
    http_server.run_uvicorn(gw.asgi_app, host, port, log_level)
    return 0


def _version() -> str:
    from modelpool import __version__

    return __version__
