"""Talking to a running gateway's admin API from the CLI (stdlib HTTP: fast to import, no event loop)."""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import typer

DEFAULT_URL = "http://127.0.0.1:4000"


def gateway_url(url: str | None) -> str:
    return (url or os.environ.get("MODELPOOL_URL") or DEFAULT_URL).rstrip("/")


def admin_token(token: str | None, config: Path | None) -> str | None:
    if token:
        return token
    if os.environ.get("MODELPOOL_ADMIN_TOKEN"):
        return os.environ["MODELPOOL_ADMIN_TOKEN"]
    from modelpool.config import ConfigError, load_config, state_dir
    from modelpool.security import read_admin_token

    try:
        loaded = load_config(config)
    except ConfigError:
        return None
    return loaded.config.server.admin_token or read_admin_token(state_dir(loaded.config))


def admin_request(
    method: str, path: str, url: str | None, token: str | None, config: Path | None, body: Any = None
) -> Any:
    base = gateway_url(url)
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method)
    tok = admin_token(token, config)
    if tok:
        req.add_header("Authorization", f"Bearer {tok}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as err:
        detail = err.read().decode("utf-8", "replace")
        print(f"error: {method} {path} → HTTP {err.code}: {detail}", file=sys.stderr)
        raise typer.Exit(1) from None
    except (urllib.error.URLError, OSError) as err:
        print(
            f"error: cannot reach the gateway at {base} ({err}); is `modelpool serve` running? (--url)",
            file=sys.stderr,
        )
        raise typer.Exit(1) from None


def admin_get(path: str, url: str | None, token: str | None, config: Path | None) -> Any:
    return admin_request("GET", path, url, token, config)


def admin_request_if_up(
    method: str, path: str, url: str | None, token: str | None, config: Path | None, timeout: float = 60
) -> Any | None:
    """Like `admin_request`, but None when no gateway answers (for verbs that can also work offline)."""
    req = urllib.request.Request(gateway_url(url) + path, method=method)
    tok = admin_token(token, config)
    if tok:
        req.add_header("Authorization", f"Bearer {tok}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as err:
        print(
            f"error: {method} {path} → HTTP {err.code}: {err.read().decode('utf-8', 'replace')}",
            file=sys.stderr,
        )
        raise typer.Exit(1) from None
    except (urllib.error.URLError, OSError):
        return None
