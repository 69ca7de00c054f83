"""The Chinese statutory calendar as data (SPEC §7): holiday-cn year documents and the merged `Calendar`.

A holiday-cn document is `{year, papers, days[{name, date, isOffDay}]}`: `isOffDay: true` is a statutory
holiday, `false` a 调休 make-up workday. The `year` is the year of the State Council notice, not of every
date in it — a notice may govern late-December dates of the previous year — so the merged calendar is
indexed by date and never by file year.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from types import MappingProxyType
from typing import Any


class CalendarDataError(ValueError):
    """A year document that does not follow the holiday-cn schema."""


@dataclass(frozen=True, slots=True)
class DayEntry:
    date: date
    name: str
    off: bool  # True: statutory holiday; False: make-up workday


@dataclass(frozen=True, slots=True)
class YearDoc:
    """One holiday-cn year document, validated."""

    year: int
    papers: tuple[str, ...] = ()
    days: tuple[DayEntry, ...] = ()

    @property
    def published(self) -> bool:
        # Upstream ships a placeholder with an empty `days` list until the State Council notice is out.
        return bool(self.days)

    @property
    def holidays_count(self) -> int:
        return sum(1 for d in self.days if d.off)

    @property
    def makeup_count(self) -> int:
        return sum(1 for d in self.days if not d.off)

    def to_json(self) -> dict[str, Any]:
        return {
            "year": self.year,
            "papers": list(self.papers),
            "days": [{"name": d.name, "date": d.date.isoformat(), "isOffDay": d.off} for d in self.days],
        }


def unpublished(year: int) -> YearDoc:
    """The document of a year whose arrangement is not out yet (upstream placeholder or a 404)."""
    return YearDoc(year=year)


def parse_year_doc(raw: Any, *, year: int | None = None) -> YearDoc:
    """Validate a decoded holiday-cn document; `year` (when given) must match its `year` field.

    Strict on purpose: a mirror serving the wrong file or an HTML error page must be a failed fetch
    (the cache is kept), not a calendar with silently wrong dates.
    """
    if not isinstance(raw, Mapping):
        raise CalendarDataError("a year document is a JSON object")
    doc_year = raw.get("year")
    if not isinstance(doc_year, int) or isinstance(doc_year, bool):
        raise CalendarDataError("missing or invalid 'year'")
    if year is not None and doc_year != year:
        raise CalendarDataError(f"document is for {doc_year}, expected {year}")
    papers = raw.get("papers", [])
    if not isinstance(papers, list) or not all(isinstance(p, str) for p in papers):
        raise CalendarDataError("'papers' must be a list of URLs")
    days = raw.get("days")
    if not isinstance(days, list):
        raise CalendarDataError("missing or invalid 'days'")
    return YearDoc(year=doc_year, papers=tuple(papers), days=tuple(_parse_day(d) for d in days))


def _parse_day(raw: Any) -> DayEntry:
    if not isinstance(raw, Mapping):
        raise CalendarDataError("a day entry is a JSON object")
    name, when, off = raw.get("name"), raw.get("date"), raw.get("isOffDay")
    if not isinstance(name, str) or not isinstance(when, str) or not isinstance(off, bool):
        raise CalendarDataError(f"invalid day entry {dict(raw)!r}")
    try:
        day = date.fromisoformat(when)
    except ValueError as exc:
        raise CalendarDataError(f"invalid date {when!r}") from exc
    return DayEntry(date=day, name=name, off=off)


@dataclass(frozen=True, slots=True)
class YearInfo:
    """What the calendar knows about one notice year (for status; routing reads the date maps)."""

    year: int
    published: bool
    papers: tuple[str, ...]
    holidays_count: int
    makeup_count: int
    fetched_at: float | None = None  # epoch seconds
    source: str | None = None


# eq=False: identity hashing lets callers memoize on "the same calendar value" cheaply.
@dataclass(frozen=True, eq=False)
class Calendar:
    """An immutable, date-indexed statutory calendar; swapped whole when a sync lands."""

    holidays: Mapping[date, str] = field(default_factory=lambda: MappingProxyType({}))
    makeup: Mapping[date, str] = field(default_factory=lambda: MappingProxyType({}))
    years: Mapping[int, YearInfo] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def empty(cls) -> Calendar:
        return cls()

    def year(self, year: int) -> YearInfo | None:
        return self.years.get(year)


@dataclass(frozen=True, slots=True)
class LoadedYear:
    doc: YearDoc
    fetched_at: float | None = None
    source: str | None = None


def build_calendar(loaded: Iterable[LoadedYear]) -> Calendar:
    """Merge year documents by date. A date listed by two documents keeps the later notice's name;
    a date that is both holiday and make-up stays in both maps (the policy lets the holiday win)."""
    holidays: dict[date, str] = {}
    makeup: dict[date, str] = {}
    years: dict[int, YearInfo] = {}
    for item in sorted(loaded, key=lambda it: it.doc.year):
        doc = item.doc
        for day in doc.days:
            (holidays if day.off else makeup)[day.date] = day.name
        years[doc.year] = YearInfo(
            year=doc.year,
            published=doc.published,
            papers=doc.papers,
            holidays_count=doc.holidays_count,
            makeup_count=doc.makeup_count,
            fetched_at=item.fetched_at,
            source=item.source,
        )
    return Calendar(
        holidays=MappingProxyType(holidays),
        makeup=MappingProxyType(makeup),
        years=MappingProxyType(years),
    )


def calendar_from_docs(docs: Iterable[YearDoc]) -> Calendar:
    """A calendar straight from documents (tests, offline tools)."""
    return build_calendar(LoadedYear(doc) for doc in docs)
