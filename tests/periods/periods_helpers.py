"""Shared helpers for the period and calendar tests: the data snapshot, a loopback holiday-cn mirror,
a settable clock and a manual sleep. Nothing here touches the internet."""

from __future__ import annotations

import asyncio
import json
import socket
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from aiohttp import web

from modelpool.config.schema import HolidaysConfig, PeakConfig
from modelpool.periods import Calendar, PeriodPolicy, calendar_from_docs, parse_year_doc

SHANGHAI = ZoneInfo("Asia/Shanghai")
SNAPSHOT_YEARS = (2024, 2025, 2026, 2027)
# The project's data snapshot (shared/data/holiday-cn/, beside the repository) and the byte-identical copy
# the package ships (src/modelpool/data/holiday-cn/). The tests read the shared one when it is there and the
# packaged one otherwise; test_bundled_snapshot_matches_the_shared_data checks that they agree.
SHARED_DIR = Path(__file__).resolve().parents[3] / "shared" / "data" / "holiday-cn"
BUNDLED_DIR = Path(__file__).resolve().parents[2] / "src" / "modelpool" / "data" / "holiday-cn"


def _complete(folder: Path) -> bool:
    return all((folder / f"{y}.json").is_file() for y in SNAPSHOT_YEARS)


DATA_DIR = SHARED_DIR if _complete(SHARED_DIR) else BUNDLED_DIR


def data_dir() -> Path:
    if not _complete(DATA_DIR):
        raise RuntimeError(f"holiday-cn data snapshot not found at {SHARED_DIR} nor at {BUNDLED_DIR}")
    return DATA_DIR


def raw_doc(year: int) -> dict[str, Any]:
    return json.loads((data_dir() / f"{year}.json").read_text(encoding="utf-8"))


def snapshot_calendar() -> Calendar:
    return calendar_from_docs(parse_year_doc(raw_doc(y)) for y in SNAPSHOT_YEARS)


def policy(
    calendar: Calendar | None = None, holidays: HolidaysConfig | None = None, **peak: Any
) -> PeriodPolicy:
    cal = snapshot_calendar() if calendar is None else calendar
    return PeriodPolicy(PeakConfig(**peak), cal, holidays or HolidaysConfig())


def bj(y: int, m: int, d: int, hh: int = 0, mm: int = 0, ss: int = 0, us: int = 0) -> datetime:
    """A Beijing wall time."""
    return datetime(y, m, d, hh, mm, ss, us, tzinfo=SHANGHAI)


def days_of(year: int, *, off: bool, name: str | None = None) -> list[date]:
    """Dates of the snapshot's `year` file with the given isOffDay (and name, when given)."""
    return [
        date.fromisoformat(d["date"])
        for d in raw_doc(year)["days"]
        if d["isOffDay"] is off and (name is None or d["name"] == name)
    ]


class Clock:
    """A settable epoch clock."""

    def __init__(self, at: datetime) -> None:
        self.now = at.timestamp()

    def __call__(self) -> float:
        return self.now

    def advance_days(self, days: float) -> None:
        self.now += days * 86400


class ManualSleep:
    """Stands in for asyncio.sleep in the refresh loop: records each delay and blocks until released."""

    def __init__(self) -> None:
        self.delays: list[float] = []
        self.entered: asyncio.Queue[float] = asyncio.Queue()
        self._gate: asyncio.Event | None = None

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)
        gate = self._gate = asyncio.Event()
        await self.entered.put(delay)
        await gate.wait()

    def release(self) -> None:
        assert self._gate is not None, "the loop is not sleeping"
        self._gate.set()


@dataclass
class HolidayMirror:
    """A loopback holiday-cn mirror serving the data snapshot under /{year}.json."""

    root: Path
    base: str = ""
    fail_status: int | None = None  # answer every request with this status
    not_found: set[int] = field(default_factory=set)  # years answered with 404
    body_override: bytes | None = None
    requests: list[int] = field(default_factory=list)

    @property
    def url_template(self) -> str:
        return f"{self.base}/{{year}}.json"

    def holidays(self, **kw: Any) -> HolidaysConfig:
        return HolidaysConfig(url_template=self.url_template, **kw)

    async def handle(self, request: web.Request) -> web.Response:
        year = int(request.match_info["year"])
        self.requests.append(year)
        if self.fail_status is not None:
            return web.Response(status=self.fail_status, text="mirror is down")
        if self.body_override is not None:
            return web.Response(body=self.body_override, content_type="text/html")
        path = self.root / f"{year}.json"
        if year in self.not_found or not path.is_file():
            return web.Response(status=404, text="404: Not Found")
        return web.Response(body=path.read_bytes(), content_type="application/json")


def closed_port_url() -> str:
    """A loopback URL template on a port nobody listens on (connection refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/{{year}}.json"
