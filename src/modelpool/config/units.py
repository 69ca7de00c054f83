"""Durations and sizes as the config writes them (`300ms`, `12h`, `32MiB`) → seconds and bytes."""

from __future__ import annotations

import re
from typing import Any

_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(b|kb|kib|mb|mib|gb|gib)?\s*$", re.IGNORECASE)
_SIZE_UNITS = {
    "b": 1,
    "kb": 1000,
    "kib": 1024,
    "mb": 1000**2,
    "mib": 1024**2,
    "gb": 1000**3,
    "gib": 1024**3,
    None: 1,
}


def parse_duration(value: Any) -> float:
    """`300ms` → 0.3, `60s` → 60, `12h` → 43200, `5` → 5.0 (seconds)."""
    if isinstance(value, bool):
        raise ValueError("a duration is a number of seconds or a string like '60s', '300ms', '12h'")
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError("a duration cannot be negative")
        return float(value)
    if isinstance(value, str):
        m = _DURATION_RE.match(value)
        if m:
            return float(m.group(1)) * _DURATION_UNITS[m.group(2)]
    raise ValueError(
        f"invalid duration {value!r}: use seconds or a string like '300ms', '60s', '5m', '12h', '1d'"
    )


def parse_size(value: Any) -> int:
    """`32MiB` → 33554432; plain numbers are bytes."""
    if isinstance(value, bool):
        raise ValueError("a size is a number of bytes or a string like '32MiB'")
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError("a size cannot be negative")
        return int(value)
    if isinstance(value, str):
        m = _SIZE_RE.match(value)
        if m:
            unit = m.group(2).lower() if m.group(2) else None
            return int(float(m.group(1)) * _SIZE_UNITS[unit])
    raise ValueError(f"invalid size {value!r}: use bytes or a string like '512KiB', '32MiB'")
