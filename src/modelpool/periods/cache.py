"""The calendar cache file in the state dir: per-year documents with when and where they came from.

Written atomically (a temporary file in the same directory, fsync, `os.replace`), so a crash mid-write
leaves the previous cache intact, never a truncated file. A cache that cannot be read is ignored — the
calendar is an optimisation of routing, never a reason for it to fail.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from modelpool.periods.calendar_data import CalendarDataError, LoadedYear, parse_year_doc

CACHE_FILENAME = "calendar.json"
CACHE_VERSION = 1


@dataclass(slots=True)
class CacheState:
    years: dict[int, LoadedYear] = field(default_factory=dict)
    last_sync: float | None = None  # last sync attempt that fetched something (epoch seconds)
    last_success: float | None = None  # last sync with no failed year
    last_error: dict[str, Any] | None = None  # {at, year, source, url, message} of the last failure
    source_errors: list[dict[str, Any]] = field(default_factory=list)  # every failed source, last sync

    def to_json(self) -> dict[str, Any]:
        return {
            "version": CACHE_VERSION,
            "last_sync": self.last_sync,
            "last_success": self.last_success,
            "last_error": self.last_error,
            "source_errors": self.source_errors,
            "years": {
                str(y): {"fetched_at": it.fetched_at, "source": it.source, "doc": it.doc.to_json()}
                for y, it in sorted(self.years.items())
            },
        }


class CacheError(ValueError):
    pass


def default_cache_path(state_dir: Path) -> Path:
    return state_dir / CACHE_FILENAME


def load_cache(path: Path) -> CacheState:
    """The cache at `path`; an absent file is an empty state. Raises `CacheError` when unreadable."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return CacheState()
    except OSError as exc:
        raise CacheError(f"cannot read {path}: {exc}") from exc
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise CacheError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
        raise CacheError(f"{path} is not a calendar cache (version {CACHE_VERSION})")
    return _state_from(data)


def _state_from(data: dict[str, Any]) -> CacheState:
    years_raw = data.get("years")
    if not isinstance(years_raw, dict):
        raise CacheError("calendar cache has no 'years' object")
    years: dict[int, LoadedYear] = {}
    for key, entry in years_raw.items():
        try:
            year = int(key)
            doc = parse_year_doc(entry["doc"], year=year)
            years[year] = LoadedYear(doc, _num(entry.get("fetched_at")), _str(entry.get("source")))
        except (CalendarDataError, KeyError, TypeError, ValueError) as exc:
            raise CacheError(f"calendar cache year {key!r} is invalid: {exc}") from exc
    last_error = data.get("last_error")
    errors = data.get("source_errors")
    return CacheState(
        years=years,
        last_sync=_num(data.get("last_sync")),
        last_success=_num(data.get("last_success")),
        last_error=last_error if isinstance(last_error, dict) else None,
        source_errors=[e for e in errors if isinstance(e, dict)] if isinstance(errors, list) else [],
    )


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def save_cache(path: Path, state: CacheState) -> None:
    """Write atomically: readers see the old file or the new one, never a partial one."""
    payload = orjson.dumps(state.to_json(), option=orjson.OPT_INDENT_2)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Same directory as the target: os.replace is only atomic within one filesystem.
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
