"""A connection of its own on the state backend's sqlite file, for the stores that keep a table of their own
there (the usage book, the session history): WAL lets it write beside the backend's connection, and it is
used from a worker thread (`check_same_thread=False`, autocommit: each store makes its own transactions)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path


def open_side_table(path: Path, schema: Iterable[str]) -> sqlite3.Connection:
    """`path` opened (its folder made), in WAL mode, with every statement of `schema` run once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=5.0, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    for statement in schema:
        conn.execute(statement)
    return conn
