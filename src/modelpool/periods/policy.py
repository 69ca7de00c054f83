"""Peak / idle periods (SPEC §7, §3.1 step 4).

Period = peak when `peak.enabled`, the local date (in `peak.time_zone`) is a working day and the local
time is inside a window. Working day = ISO weekday in `peak.weekdays` or a make-up workday (fetched ∪
`peak.makeup_workdays`), and not a holiday (fetched ∪ `holidays.override`); a holiday wins over a make-up
day. With the calendar off (`holidays.sync: false` / `source: off`) only the two manual lists remain.

Everything here is synchronous and pure over an immutable `Calendar`, so routing can ask on every call.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo

from modelpool.config.schema import HolidaysConfig, PeakConfig, PoolConfig
from modelpool.periods.calendar_data import Calendar

# The next flip is searched day by day. A year and a month covers any real arrangement (the longest
# idle stretch is a week or two) and bounds the cost when the period never changes.
MAX_LOOKAHEAD_DAYS = 400
_DAY_SECONDS = 86400
_WEEKDAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
OVERRIDE_NAME = "holidays.override"
MANUAL_MAKEUP_NAME = "peak.makeup_workdays"

DayKind = Literal["holiday", "makeup", "workday", "rest"]
# A moment: an aware datetime, a naive one (wall time in the policy zone), epoch seconds, or None (now).
When = datetime | float | None
CostPeriod = Literal["peak", "off_peak"]


@dataclass(frozen=True, slots=True)
class Window:
    start: int  # seconds since local midnight, inclusive
    end: int  # exclusive; 86400 for a 24:00 end
    text: str


def parse_window(text: str) -> Window:
    start, end = text.split("-")
    return Window(_seconds(start), _seconds(end), text)


def _seconds(hhmm: str) -> int:
    hours, minutes = hhmm.split(":")
    return int(hours) * 3600 + int(minutes) * 60  # "24:00" → 86400, the end of the day


@dataclass(frozen=True, slots=True)
class DayInfo:
    day: date
    working: bool
    kind: DayKind
    holiday: str | None = None  # name of the holiday, when the date is one
    makeup: str | None = None  # name of the make-up arrangement, when the date is one (even if overruled)


@dataclass(frozen=True, slots=True)
class Period:
    peak: bool
    local: datetime
    reason: str

    @property
    def name(self) -> str:
        return "peak" if self.peak else "idle"


class PeriodPolicy:
    """The period at any moment, the next flip, and the provider order in force."""

    def __init__(
        self,
        peak: PeakConfig,
        calendar: Calendar | None = None,
        holidays: HolidaysConfig | None = None,
    ) -> None:
        self.peak = peak
        self.calendar = calendar if calendar is not None else Calendar.empty()
        self.holidays = holidays if holidays is not None else HolidaysConfig()
        self.zone = ZoneInfo(peak.time_zone)
        self.windows = tuple(sorted((parse_window(w) for w in peak.windows), key=lambda w: w.start))
        self._weekdays = frozenset(peak.weekdays)
        self._override = frozenset(date.fromisoformat(d) for d in self.holidays.override)
        self._manual_makeup = frozenset(date.fromisoformat(d) for d in peak.makeup_workdays)
        # Candidate flip instants within a day: midnight (the day's kind may change) and window edges.
        edges = {0} | {w.start for w in self.windows} | {w.end for w in self.windows if w.end < _DAY_SECONDS}
        self._edges = tuple(sorted(edges))

    # ── the calendar ─────────────────────────────────────────────────────────────────────────────

    @property
    def uses_fetched(self) -> bool:
        """Whether fetched dates count: `sync: false` and `source: off` turn them off entirely."""
        return self.holidays.sync and self.holidays.source.strip().lower() != "off"

    def holiday_name(self, d: date) -> str | None:
        if self.uses_fetched and d in self.calendar.holidays:
            return self.calendar.holidays[d]
        return OVERRIDE_NAME if d in self._override else None

    def makeup_name(self, d: date) -> str | None:
        if self.uses_fetched and d in self.calendar.makeup:
            return self.calendar.makeup[d]
        return MANUAL_MAKEUP_NAME if d in self._manual_makeup else None

    def day_info(self, d: date) -> DayInfo:
        holiday, makeup = self.holiday_name(d), self.makeup_name(d)
        if holiday is not None:  # a statutory holiday wins over a make-up arrangement
            return DayInfo(d, False, "holiday", holiday, makeup)
        if makeup is not None:
            return DayInfo(d, True, "makeup", None, makeup)
        if d.isoweekday() in self._weekdays:
            return DayInfo(d, True, "workday")
        return DayInfo(d, False, "rest")

    def is_working_day(self, d: date) -> bool:
        return self.day_info(d).working

    # ── the period ───────────────────────────────────────────────────────────────────────────────

    def local(self, dt: When = None) -> datetime:
        """`dt` in the policy's zone; `None` is now, a number is epoch seconds, and a naive time is read as
        wall time in the zone (what `modelpool period --at 2026-10-01T10:00` means for Beijing hours)."""
        if dt is None:
            return datetime.now(UTC).astimezone(self.zone)
        if isinstance(dt, int | float):  # epoch seconds, as the planner's clock gives them
            return datetime.fromtimestamp(dt, self.zone)
        if dt.tzinfo is None:
            return dt.replace(tzinfo=self.zone)
        return dt.astimezone(self.zone)

    def period_at(self, dt: When = None) -> Period:
        local = self.local(dt)
        peak, reason = self._classify(local)
        return Period(peak, local, reason)

    def is_peak(self, dt: When = None) -> bool:
        return self._is_peak_local(self.local(dt))

    def cost_period(self, dt: When = None) -> CostPeriod:
        """Which half of a `{peak, off_peak}` cost hint applies (`enabled: false` is always off-peak)."""
        return "peak" if self.is_peak(dt) else "off_peak"

    def _window_at(self, local: datetime) -> Window | None:
        t = local.hour * 3600 + local.minute * 60 + local.second + local.microsecond / 1e6
        for w in self.windows:
            if w.start <= t < w.end:
                return w
        return None

    def _is_peak_local(self, local: datetime) -> bool:
        # The routing hot path (every call): same rule as `_classify`, without building the reason.
        if not self.peak.enabled or not self.windows or not self.day_info(local.date()).working:
            return False
        return self._window_at(local) is not None

    def _classify(self, local: datetime) -> tuple[bool, str]:
        if not self.peak.enabled:
            return False, "peak periods disabled (peak.enabled: false)"
        info = self.day_info(local.date())
        if not info.working:
            return False, _rest_reason(info)
        day = f"make-up workday ({info.makeup})" if info.kind == "makeup" else "working day"
        if not self.windows:
            return False, f"{day}, but no peak windows are configured"
        window = self._window_at(local)
        if window is None:
            return False, f"{day}, outside the peak windows"
        return True, f"{day}, inside window {window.text}"

    # ── the next flip ────────────────────────────────────────────────────────────────────────────

    def next_flip(self, dt: When = None) -> datetime | None:
        """The first instant after `dt` whose period differs from the period at `dt`, in the policy zone.

        A Friday evening reports Monday 09:00 (not midnight): candidate instants are midnights and window
        edges, and one that does not change the period (a non-working midnight, back-to-back windows) is
        skipped. `None` when nothing changes within `MAX_LOOKAHEAD_DAYS` (disabled, no windows, …).
        """
        now = self.local(dt)
        if not self.peak.enabled or not self.windows:
            return None
        current = self._is_peak_local(now)
        now_utc = now.astimezone(UTC)
        for offset in range(MAX_LOOKAHEAD_DAYS + 1):
            day = now.date() + timedelta(days=offset)
            for edge in self._edges:
                at = self._wall(day, edge)
                # Compare in UTC: same-tzinfo datetimes compare by wall time, which lies around DST folds.
                if at.astimezone(UTC) > now_utc and self._is_peak_local(at) != current:
                    return at
        return None

    def _wall(self, day: date, seconds: int) -> datetime:
        local = datetime.combine(day, time(seconds // 3600, seconds % 3600 // 60), tzinfo=self.zone)
        # Round-trip through UTC so a wall time skipped by a DST jump becomes the instant after the jump.
        return local.astimezone(UTC).astimezone(self.zone)

    # ── the overlay ──────────────────────────────────────────────────────────────────────────────

    def provider_order_with_source(self, pool: PoolConfig, dt: When = None) -> tuple[list[str], str]:
        """The base order in force and the key it came from (for routing reasons).

        An empty period list has no opinion and inherits `pool.provider_order`; `enabled: false` turns the
        overlay off entirely, so the idle list is not used either.
        """
        if not self.peak.enabled:
            return list(pool.provider_order), "pool.provider_order"
        if self.is_peak(dt):
            key, order = "peak.peak_provider_order", self.peak.peak_provider_order
        else:
            key, order = "peak.off_peak_provider_order", self.peak.off_peak_provider_order
        if order:
            return list(order), key
        return list(pool.provider_order), "pool.provider_order"

    def provider_order(self, pool: PoolConfig, dt: When = None) -> list[str]:
        return self.provider_order_with_source(pool, dt)[0]

    # ── explanation ──────────────────────────────────────────────────────────────────────────────

    def explain(self, dt: When = None) -> dict[str, Any]:
        """The live reading: period, local date/time, windows, why, next flip and warnings (JSON-safe)."""
        local = self.local(dt)
        peak, reason = self._classify(local)
        info = self.day_info(local.date())
        flip = self.next_flip(local)
        return {
            "period": "peak" if peak else "idle",
            "peak": peak,
            "enabled": self.peak.enabled,
            "time_zone": self.peak.time_zone,
            "local": local.isoformat(),
            "local_date": local.date().isoformat(),
            "local_time": local.strftime("%H:%M:%S"),
            "weekday": local.isoweekday(),
            "weekday_name": _WEEKDAY_NAMES[local.weekday()],
            "windows": [w.text for w in self.windows],
            "weekdays": sorted(self._weekdays),
            "working_day": info.working,
            "day_kind": info.kind,
            "holiday": info.holiday,
            "makeup": info.makeup,
            "why": reason,
            "next_flip": flip.isoformat() if flip else None,
            "next_period": ("idle" if peak else "peak") if flip else None,
            "calendar": self._calendar_note(local.year),
            "warnings": self._warnings(info, local.year),
        }

    def _calendar_note(self, year: int) -> dict[str, Any]:
        info = self.calendar.year(year)
        return {
            "in_use": self.uses_fetched,
            "year": year,
            "loaded": info is not None,
            "published": info.published if info else None,
        }

    def _warnings(self, info: DayInfo, year: int) -> list[str]:
        out: list[str] = []
        day = info.day.isoformat()
        if info.kind == "holiday":
            out.append(f"{day} is a statutory holiday ({info.holiday}): idle all day")
        makeup_idle = self._makeup_idle_reason(info)
        if makeup_idle:
            out.append(f"{day} is a make-up workday ({info.makeup}) but is treated as idle: {makeup_idle}")
        if self.uses_fetched:
            year_info = self.calendar.year(year)
            if year_info is None:
                out.append(f"no statutory calendar loaded for {year}: following the weekday rule")
            elif not year_info.published:
                out.append(f"the {year} arrangement is not published yet: following the weekday rule")
        return out

    def _makeup_idle_reason(self, info: DayInfo) -> str | None:
        if info.makeup is None:
            return None
        if info.kind == "holiday":
            return "it is also a holiday, and a holiday wins"
        if not self.peak.enabled:
            return "peak periods are disabled"
        if not self.windows:
            return "no peak windows are configured"
        return None


def _rest_reason(info: DayInfo) -> str:
    if info.kind == "holiday":
        if info.holiday == OVERRIDE_NAME:
            return "holiday (holidays.override)"
        return f"statutory holiday: {info.holiday}"
    name = _WEEKDAY_NAMES[info.day.weekday()]
    if info.day.isoweekday() >= 6:
        return f"weekend ({name})"
    return f"rest day ({name} is not in peak.weekdays)"
