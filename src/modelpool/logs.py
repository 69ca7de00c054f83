"""Logging for `modelpool serve` and `demo`: JSON lines when stderr is not a terminal, text otherwise.

A JSON line holds `ts` (UTC, ms), `level`, `logger`, `msg`, the fields of a call line (see
`modelpool.observe.call_fields`) when the record is one, and `exc` for a traceback. uvicorn's own loggers
propagate here (its access log stays off: the call line replaces it).
"""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime
from typing import IO, Any

import orjson


def _ts(created: float) -> str:
    return datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": _ts(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        fields = getattr(record, "call", None)
        if isinstance(fields, dict):
            out.update(fields)
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(out, default=str).decode()


class TextFormatter(logging.Formatter):
    """The classic line; a call line gets its fields as `key=value` pairs (empty ones left out)."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = getattr(record, "call", None)
        if not isinstance(fields, dict):
            return line
        pairs = [f"{k}={_text(v)}" for k, v in fields.items() if v is not None and v != "" and v != []]
        return line + " " + " ".join(pairs)


def _text(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(f"{a.get('route')}:{a.get('kind')}" if isinstance(a, dict) else str(a) for a in value)
    return str(value)


def wants_json(fmt: str, stream: IO[str]) -> bool:
    if fmt == "json":
        return True
    if fmt == "text":
        return False
    isatty = getattr(stream, "isatty", None)
    return not (isatty is not None and isatty())


class _Handler(logging.StreamHandler):  # type: ignore[type-arg]
    """Marks the handler this module installed, so a second setup replaces it instead of doubling lines."""


def setup_logging(level: str = "info", fmt: str = "auto", stream: IO[str] | None = None) -> str:
    """Install the root handler; returns the format in use ("json" or "text")."""
    out = stream if stream is not None else sys.stderr
    use_json = wants_json(fmt, out)
    handler = _Handler(out)
    handler.setFormatter(JsonFormatter() if use_json else TextFormatter())
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _Handler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(getattr(logging, level.upper(), logging.INFO))
    return "json" if use_json else "text"
