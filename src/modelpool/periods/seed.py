"""The holiday-cn snapshot shipped inside the package (MIT; see data/holiday-cn/README.md).

A fresh install with no network would otherwise know no statutory holiday and treat National Day as
peak. The snapshot seeds the cache when there is none; it is marked with `fetched_at = None` so the first
sync replaces it as soon as the network allows, and a published year is never replaced by an empty one.
"""

from __future__ import annotations

import logging
from importlib import resources

import orjson

from modelpool.periods.calendar_data import CalendarDataError, LoadedYear, parse_year_doc

log = logging.getLogger("modelpool.periods")
SEED_SOURCE = "bundled snapshot"


def seed_years() -> dict[int, LoadedYear]:
    years: dict[int, LoadedYear] = {}
    try:
        folder = resources.files("modelpool") / "data" / "holiday-cn"
        entries = [e for e in folder.iterdir() if e.name.endswith(".json")]
    except (FileNotFoundError, OSError, ModuleNotFoundError):
        return years
    for entry in entries:
        try:
            doc = parse_year_doc(orjson.loads(entry.read_bytes()))
        except (CalendarDataError, orjson.JSONDecodeError, OSError) as exc:
            log.warning("bundled calendar file %s skipped: %s", entry.name, exc)
            continue
        years[doc.year] = LoadedYear(doc=doc, fetched_at=None, source=SEED_SOURCE)
    return years
