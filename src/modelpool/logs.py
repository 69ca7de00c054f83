"""Logging for `modelpool serve` and `demo`: JSON lines when stderr is not a terminal, text otherwise.

A JSON line holds `ts` (UTC, ms), `level`, `logger`, `msg`, the fields of a call line (see
`modelpool.observe.call_fields`) when the record is one, and `exc` for a traceback. uvicorn's own loggers
propagate here (its access log stays off: the call line replaces it).
"""

from __future__ import annotations

import atexit
import logging
import queue
import sys
import threading
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
    """The handler this module installs (a second setup replaces it instead of doubling lines).

    Lines are formatted by the caller and written by a daemon thread: a write to a pipe whose reader is
    slow (a log shipper, a full terminal) blocks, and on the event loop that would stall every call.
    The queue is bounded; when the reader cannot keep up, lines are dropped and counted, never waited on.
    """

    def __init__(self, stream: IO[str]) -> None:
        super().__init__(stream)
        self._lines: queue.Queue[str | threading.Event | None] = queue.Queue(maxsize=_MAX_PENDING)
        self.dropped = 0
        self._writer = threading.Thread(target=self._write_loop, name="modelpool-log-writer", daemon=True)
        self._writer.start()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record) + self.terminator
        except Exception:
            self.handleError(record)
            return
        self._enqueue(text)

    def write_call(self, fields: dict[str, Any]) -> None:
        """A JSON call line without a LogRecord: one per client call, and the logging machinery (record,
        filters, formatter) cost several times the line itself. Same shape as `JsonFormatter`'s."""
        line = {"ts": _ts(time.time()), "level": "info", "logger": CALL_LOGGER, "msg": "call", **fields}
        self._enqueue(orjson.dumps(line, default=str).decode() + "\n")

    def _enqueue(self, item: str | threading.Event | None) -> None:
        try:
            self._lines.put_nowait(item)
        except queue.Full:
            self.dropped += 1

    def _write_loop(self) -> None:
        while True:
            item = self._lines.get()
            batch: list[str] = []
            while True:
                if item is None:
                    self._write(batch)
                    return
                if isinstance(item, threading.Event):
                    self._write(batch)
                    batch = []
                    item.set()
                else:
                    batch.append(item)
                try:
                    item = self._lines.get_nowait()
                except queue.Empty:
                    break
            self._write(batch)

    def _write(self, batch: list[str]) -> None:
        if not batch:
            return
        try:
            self.stream.write("".join(batch))
            self.stream.flush()
        except (OSError, ValueError):
            pass  # a closed or broken stderr must not fail anything

    def drain(self, timeout: float = 2.0) -> None:
        """Wait (bounded) until every line queued so far is written."""
        done = threading.Event()
        try:
            self._lines.put(done, timeout=timeout)
        except queue.Full:
            return
        done.wait(timeout)

    def close(self) -> None:
        if self._writer.is_alive():
            self.drain()
            self._enqueue(None)
            self._writer.join(timeout=2.0)
        super().close()


_MAX_PENDING = 10_000


def flush_logs(timeout: float = 2.0) -> None:
    """Write every queued line now (tests, shutdown)."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, _Handler):
            handler.drain(timeout)


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
        old.close()
    root.addHandler(handler)
    root.setLevel(getattr(logging, level.upper(), logging.INFO))
    global fast_call_line
    fast_call_line = handler.write_call if use_json else None
    return "json" if use_json else "text"


# Lines still queued when the process exits normally are written (bounded wait).
atexit.register(flush_logs)
