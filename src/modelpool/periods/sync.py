"""The self-syncing statutory calendar (SPEC §7): fetch, cache, refresh in the background, report.

Routing only ever reads `CalendarStore.calendar`, an immutable value swapped whole when a sync lands;
it never awaits and never sees the network. A sync re-fetches the reachable years (this and next, in the
peak time zone) when forced, when one is missing or not yet published, or when its copy is older than
`holidays.cache_days`. Failures keep the cache and are recorded; nothing here raises into routing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import orjson

from modelpool.config.schema import HolidaysConfig, PeakConfig
from modelpool.periods.cache import CacheError, CacheState, load_cache, save_cache
from modelpool.periods.calendar_data import (
    Calendar,
    CalendarDataError,
    LoadedYear,
    YearDoc,
    build_calendar,
    parse_year_doc,
    unpublished,
)
from modelpool.periods.policy import PeriodPolicy
from modelpool.periods.seed import seed_years
from modelpool.periods.sources import (
    BUNDLED,
    Fetch,
    Source,
    UnknownSourceError,
    fetching_enabled,
    http_fetch,
    sources_for,
)

log = logging.getLogger(__name__)

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]
_DAY = 86400.0


@dataclass(slots=True)
class YearOutcome:
    """What one sync learned about one year."""

    year: int
    doc: YearDoc | None = None  # None: every source failed
    source: str | None = None
    errors: list[dict[str, Any]] = field(default_factory=list)  # every source that failed
    fatal: dict[str, Any] | None = None  # the error that makes this year's sync a failure


class CalendarStore:
    """Owns the cache file and the in-memory calendar; one per gateway process."""

    def __init__(
        self,
        cache_path: Path,
        holidays: HolidaysConfig,
        *,
        fetch: Fetch | None = None,
        clock: Clock = time.time,
        time_zone: str = "Asia/Shanghai",
        sleep: Sleep = asyncio.sleep,
        seed: bool = True,
    ) -> None:
        self.cache_path = cache_path
        self.seed = seed  # start from the bundled snapshot when there is no cache
        self._holidays = holidays
        self._zone = ZoneInfo(time_zone)
        self._fetch = fetch
        self._clock = clock
        self._sleep = sleep
        self._state = CacheState()
        self._calendar = Calendar.empty()
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._interval: float | None = None
        self._policy_memo: tuple[Calendar, PeakConfig, HolidaysConfig, PeriodPolicy] | None = None

    # ── what routing reads ───────────────────────────────────────────────────────────────────────

    @property
    def calendar(self) -> Calendar:
        return self._calendar

    @property
    def holidays(self) -> HolidaysConfig:
        return self._holidays

    def policy(self, peak: PeakConfig, holidays: HolidaysConfig | None = None) -> PeriodPolicy:
        """The policy over the current calendar, rebuilt only when the calendar or a config object changes
        (config objects are immutable per runtime snapshot, so identity is the right key)."""
        hol = holidays if holidays is not None else self._holidays
        memo = self._policy_memo
        if memo and memo[0] is self._calendar and memo[1] is peak and memo[2] is hol:
            return memo[3]
        policy = PeriodPolicy(peak, self._calendar, hol)
        self._policy_memo = (self._calendar, peak, hol, policy)
        return policy

    def configure(self, holidays: HolidaysConfig, time_zone: str | None = None) -> None:
        """Apply a reloaded config. `cache_days`, `sync`, `source` apply from the next sync; the background
        cadence (`update_days`) stays as it was at `start()` until the next start (seed: fixed at load)."""
        self._holidays = holidays
        if time_zone:
            self._zone = ZoneInfo(time_zone)

    # ── lifecycle ────────────────────────────────────────────────────────────────────────────────

    def load(self) -> None:
        """Read the cache file (no network). An unreadable cache is ignored and the error recorded."""
        try:
            self._state = load_cache(self.cache_path)
        except CacheError as exc:
            log.warning("holiday calendar cache ignored: %s", exc)
            self._state = CacheState(last_error=self._error(None, "cache", str(self.cache_path), str(exc)))
        if not self._state.years and self.seed:
            self._state.years = seed_years()  # until the first successful sync
        self._rebuild()

    async def start(self, *, wait: bool = False) -> None:
        """Load the cache, then sync (when due) and refresh every `update_days` in the background.

        By default the first sync runs in the background too, so a slow or absent network never delays
        startup (routing meanwhile uses the cache, or the weekday rule). `wait=True` awaits it first.
        """
        if self._task is not None:
            return  # already running
        self.load()
        self._interval = self._holidays.update_days * _DAY
        if wait:
            await self._safe_sync()
        self._task = asyncio.create_task(self._refresh_loop(first=not wait), name="calendar-refresh")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _refresh_loop(self, *, first: bool) -> None:
        if first:
            await self._safe_sync()
        interval = self._interval or self._holidays.update_days * _DAY
        while True:
            await self._sleep(interval)
            await self._safe_sync()

    async def _safe_sync(self) -> None:
        try:
            await self.sync()
        except asyncio.CancelledError:
            raise
        except Exception:  # a bug here must not kill the refresh loop or reach routing
            log.exception("holiday calendar sync failed unexpectedly")

    # ── syncing ──────────────────────────────────────────────────────────────────────────────────

    def reachable_years(self) -> tuple[int, int]:
        this = self.today().year
        return this, this + 1

    def today(self) -> date:
        return datetime.fromtimestamp(self._clock(), self._zone).date()

    def due_years(self, force: bool = False) -> list[int]:
        """Years a sync would fetch now: all reachable ones when forced or after a failed sync (so the next
        refresh retries it), else those missing, unpublished (so a November notice lands within
        `update_days`) or older than `cache_days` (read on every sync)."""
        if not fetching_enabled(self._holidays):
            return []
        now, max_age = self._clock(), self._holidays.cache_days * _DAY
        everything = force or self._state.last_error is not None
        due = []
        for year in self.reachable_years():
            item = self._state.years.get(year)
            if everything or item is None or not item.doc.published or _older(item, now, max_age):
                due.append(year)
        return due

    async def sync(self, force: bool = False) -> dict[str, Any]:
        """Fetch what is due (everything reachable when `force`), update cache and calendar; the status."""
        async with self._lock:
            due = self.due_years(force)
            if due:
                await self._sync_years(due)
        return self.status()

    async def _sync_years(self, years: list[int]) -> None:
        now = self._clock()
        try:
            sources = sources_for(self._holidays)
        except UnknownSourceError as exc:
            error = self._error(None, self._holidays.source, "", str(exc))
            self._finish(now, [error], [error])
            return
        async with self._fetcher() as fetch:
            outcomes = await asyncio.gather(*(self._fetch_year(fetch, sources, y) for y in years))
        for outcome in outcomes:
            self._apply(outcome, now)
        fatal = [o.fatal for o in outcomes if o.fatal is not None]
        self._finish(now, fatal, [e for o in outcomes for e in o.errors])

    @contextlib.asynccontextmanager
    async def _fetcher(self) -> AsyncIterator[Fetch]:
        if self._fetch is not None:
            yield self._fetch
        else:
            async with http_fetch() as fetch:
                yield fetch

    async def _fetch_year(self, fetch: Fetch, sources: list[Source], year: int) -> YearOutcome:
        """Try each source in order; the first valid document wins. Every source answering 404 means
        the year is not published yet (upstream has no file for it)."""
        outcome = YearOutcome(year)
        not_found = 0
        for source in sources:
            url = source.url(year)
            try:
                status, body = await fetch(url)
                if status == 404:
                    not_found += 1
                    continue
                if status != 200:
                    outcome.errors.append(self._error(year, source.id, url, f"HTTP {status}"))
                    continue
                outcome.doc = parse_year_doc(orjson.loads(body), year=year)
                outcome.source = source.id
                return outcome
            except asyncio.CancelledError:
                raise
            except (CalendarDataError, orjson.JSONDecodeError) as exc:
                outcome.errors.append(self._error(year, source.id, url, f"invalid document: {exc}"))
            except Exception as exc:  # network errors of every flavour: aiohttp, OS, timeouts
                outcome.errors.append(self._error(year, source.id, url, _describe(exc)))
        if sources and not_found == len(sources):
            outcome.doc, outcome.source = unpublished(year), sources[0].id
            if year == self.today().year:
                # The current year always exists upstream: a 404 for it means a wrong mirror, so it is
                # reported as a failure (the weekday rule still applies) rather than quietly as news.
                outcome.fatal = self._error(year, sources[0].id, sources[0].url(year), "HTTP 404")
                outcome.errors.append(outcome.fatal)
        elif outcome.errors:
            outcome.fatal = outcome.errors[-1]
        return outcome

    def _apply(self, outcome: YearOutcome, now: float) -> None:
        if outcome.doc is None:
            return  # failed: keep whatever the cache has
        cached = self._state.years.get(outcome.year)
        if cached is not None and cached.doc.published and not outcome.doc.published:
            # A source that suddenly has no dates for a published year is glitching; keep the real data.
            log.warning("holiday source returned no dates for published year %s; keeping cache", outcome.year)
            return
        self._state.years[outcome.year] = LoadedYear(outcome.doc, now, outcome.source)

    def _finish(self, now: float, fatal: list[dict[str, Any]], errors: list[dict[str, Any]]) -> None:
        state = self._state
        state.last_sync = now
        state.source_errors = errors  # includes sources that failed before a fallback succeeded
        state.last_error = fatal[-1] if fatal else None
        if not fatal:
            state.last_success = now
        for error in errors:
            log.warning("holiday calendar: %s %s: %s", error["source"], error["url"], error["message"])
        try:
            save_cache(self.cache_path, state)
        except OSError as exc:
            # The in-memory calendar is still good; only persistence failed.
            state.last_error = self._error(None, "cache", str(self.cache_path), f"cache write failed: {exc}")
            log.warning("holiday calendar cache write failed: %s", exc)
        self._rebuild()

    def _rebuild(self) -> None:
        self._calendar = build_calendar(self._state.years.values())

    def _error(self, year: int | None, source: str, url: str, message: str) -> dict[str, Any]:
        return {"at": self._clock(), "year": year, "source": source, "url": url, "message": message}

    # ── status ───────────────────────────────────────────────────────────────────────────────────

    def status(self, today: date | None = None) -> dict[str, Any]:
        """The current year's calendar status (the settings card / `modelpool calendar`)."""
        year = (today or self.today()).year
        item = self._state.years.get(year)
        doc = item.doc if item else None
        published = doc.published if doc else None
        return {
            "year": year,
            "status": self._status_word(item),
            "published": published,
            "not_published_yet": published is False,
            "label": _label(published, doc),
            "holidays": doc.holidays_count if doc else None,
            "makeup_workdays": doc.makeup_count if doc else None,
            "last_update": _iso(item.fetched_at if item else None, self._zone),
            "last_sync": _iso(self._state.last_sync, self._zone),
            "source": item.source if item else None,
            "papers": list(doc.papers) if doc else [],
            "last_error": _error_view(self._state.last_error, self._zone),
            "source_errors": [_error_view(e, self._zone) for e in self._state.source_errors],
            "auto_update": fetching_enabled(self._holidays),
            "update_days": self._holidays.update_days,
            "cache_days": self._holidays.cache_days,
            "cache_path": str(self.cache_path),
            "years_loaded": sorted(self._state.years),
        }

    def _status_word(self, item: LoadedYear | None) -> str:
        if not fetching_enabled(self._holidays):
            # `source: bundled` uses the snapshot shipped with modelpool: routing has a calendar, no sync.
            return (
                "bundled"
                if self._holidays.sync and self._holidays.source.strip().lower() == BUNDLED
                else "off"
            )
        if self._state.last_error is not None:
            return "failed"
        if item is None:
            return "not synced"
        age = self._clock() - (item.fetched_at or 0.0)
        return "stale" if age > self._holidays.cache_days * _DAY else "synced"


def _older(item: LoadedYear, now: float, max_age: float) -> bool:
    return item.fetched_at is None or now - item.fetched_at > max_age


def _label(published: bool | None, doc: YearDoc | None) -> str:
    if published is None or doc is None:
        return "no data"
    if not published:
        return "Not published yet"
    return f"{doc.holidays_count} holidays, {doc.makeup_count} make-up workdays"


def _iso(ts: float | None, zone: ZoneInfo) -> str | None:
    return datetime.fromtimestamp(ts, zone).isoformat() if ts is not None else None


def _error_view(error: dict[str, Any] | None, zone: ZoneInfo) -> dict[str, Any] | None:
    if error is None:
        return None
    at = error.get("at")
    return {**error, "at": _iso(at, zone) if isinstance(at, int | float) else at}


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
