"""Admin token handling (SPEC §12): configured, or generated once into the state dir."""

from __future__ import annotations

import ipaddress
import os
import secrets
from pathlib import Path

TOKEN_FILE = "admin_token"


def load_or_create_admin_token(state_dir: Path) -> tuple[str, bool]:
    """Return (token, created). The file is written atomically with mode 0600."""
    path = state_dir / TOKEN_FILE
    try:
        token = path.read_text().strip()
        if token:
            return token, False
    except FileNotFoundError:
        pass
    state_dir.mkdir(parents=True, exist_ok=True)
    token = "mp-admin-" + secrets.token_urlsafe(24)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(token + "\n")
            fh.flush()
            os.fsync(fh.fileno())  # the bytes are on disk before the name points at them
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # no half-written token for the next start to trust
        raise
    return token, True


def read_admin_token(state_dir: Path) -> str | None:
    try:
        return (state_dir / TOKEN_FILE).read_text().strip() or None
    except OSError:
        return None


def is_loopback(host: str) -> bool:
    # An address literal must parse as loopback: a host *name* such as `127.example.com` starts like
    # 127.x but may resolve to a public interface, so only `localhost` is trusted by name.
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
