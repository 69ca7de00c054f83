"""Logging for `modelpool serve` and `demo`: JSON lines when stderr is not a terminal, text otherwise.

A JSON line holds `ts` (UTC, ms), `level`, `logger`, `msg`, the fields of a call line (see
`modelpool.observe.call_fields`) when the record is one, and `exc` for a traceback. uvicorn's own loggers
propagate here (its access log stays off: the call line replaces it).
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import IO, Any

import orjson


class _Clock:
    """ISO-8601 UTC timestamps with milliseconds; the part up to the second is formatted once a second
    (a call line is written per call, and datetime formatting cost more than the rest of the line)."""

    __slots__ = ("prefix", "second")

    def __init__(self) -> None:
        self.second = -1
        self.prefix = ""

    def __call__(self, created: float) -> str:
        second = int(created)
        if second != self.second:
            self.second = second
            self.prefix = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        return f"{self.prefix}.{int((created - second) * 1000):03d}Z"


_ts = _Clock()


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
    """The handler this module installs (a second setup replaces it instead of doubling lines)."""

    def write_call(self, fields: dict[str, Any]) -> None:
        """A JSON call line without a LogRecord: one per client call, and the logging machinery (record,
        filters, formatter) cost several times the line itself. Same shape as `JsonFormatter`'s."""
        line = {"ts": _ts(time.time()), "level": "info", "logger": CALL_LOGGER, "msg": "call", **fields}
        text = orjson.dumps(line, default=str).decode() + "\n"
        with self.lock or contextlib.nullcontext():
            try:
                self.stream.write(text)
                self.stream.flush()
            except (OSError, ValueError):
                pass  # a closed or broken stderr must not fail a call


CALL_LOGGER = "modelpool.calls"
# Set by `setup_logging` in JSON mode: `Observer.done` hands the call line to it directly.
fast_call_line: Callable[[dict[str, Any]], None] | None = None


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
    global fast_call_line
    fast_call_line = handler.write_call if use_json else None
    return "json" if use_json else "text"
