"""The self-syncing calendar against a loopback holiday-cn mirror (never the internet)."""

from __future__ import annotations

import asyncio
from datetime import date
from pathlib import Path
from typing import Any

import orjson
import pytest
from periods_helpers import Clock, HolidayMirror, ManualSleep, bj, closed_port_url, raw_doc

from modelpool.config.schema import HolidaysConfig, PeakConfig
from modelpool.periods import CalendarStore, Fetch, calendar_report, default_cache_path

NOW = bj(2026, 3, 10, 10)  # a Tuesday: this year 2026, next year 2027 (unpublished in the snapshot)


def store_for(
    tmp_path: Path,
    holidays: HolidaysConfig,
    clock: Clock | None = None,
    *,
    fetch: Fetch | None = None,
    sleep: ManualSleep | None = None,
    seed: bool = False,
) -> CalendarStore:
    # Most tests prove the fetch/cache logic from an empty start, so the bundled snapshot is off unless
    # a test is about it.
    return CalendarStore(
        default_cache_path(tmp_path),
        holidays,
        fetch=fetch,
        clock=clock or Clock(NOW),
        sleep=sleep or asyncio.sleep,
        seed=seed,
    )


def cache_json(tmp_path: Path) -> dict[str, Any]:
    return orjson.loads(default_cache_path(tmp_path).read_bytes())


# ── a healthy sync ────────────────────────────────────────────────────────────────────────────────


async def test_sync_fetches_this_and_next_year_and_routes_on_it(
    tmp_path: Path, mirror: HolidayMirror
) -> None:
    store = store_for(tmp_path, mirror.holidays())
    status = await store.sync()
    assert sorted(mirror.requests) == [2026, 2027]
    assert status["status"] == "synced" and status["year"] == 2026
    assert status["source"] == "url_template" and status["papers"] == raw_doc(2026)["papers"]
    assert status["holidays"] == sum(1 for d in raw_doc(2026)["days"] if d["isOffDay"])
    assert status["last_error"] is None and status["auto_update"] is True
    assert status["last_update"] == NOW.isoformat()

    p = store.policy(PeakConfig())
    assert not p.is_peak(bj(2026, 10, 1, 10)) and p.is_peak(bj(2026, 2, 14, 10))
    assert store.policy(PeakConfig()) is not p  # a new config object → a new policy
    peak = PeakConfig()
    assert store.policy(peak) is store.policy(peak)  # memoized while nothing changed

    cached = cache_json(tmp_path)
    assert set(cached["years"]) == {"2026", "2027"}


async def test_start_loads_syncs_and_stops(tmp_path: Path, mirror: HolidayMirror) -> None:
    store = store_for(tmp_path, mirror.holidays(), sleep=ManualSleep())
    await store.start(wait=True)
    try:
        assert 2026 in store.calendar.years and store.status()["status"] == "synced"
    finally:
        await store.stop()
    await store.stop()  # idempotent


async def test_a_fresh_cache_needs_no_fetch(tmp_path: Path, mirror: HolidayMirror) -> None:
    clock = Clock(NOW)
    await store_for(tmp_path, mirror.holidays(), clock).sync()
    mirror.requests.clear()
    again = store_for(tmp_path, mirror.holidays(), clock)
    again.load()
    assert again.calendar.year(2026) is not None  # from the cache alone
    await again.sync()
    assert mirror.requests == [2027]  # only the unpublished next year is re-tried


async def test_http_fetch_against_the_mirror_without_injection(tmp_path: Path, mirror: HolidayMirror) -> None:
    # The default aiohttp fetcher (its own session) is what the other loopback tests exercise too.
    store = store_for(tmp_path, HolidaysConfig(source=mirror.base))  # a mirror URL without {year}
    status = await store.sync()
    assert status["status"] == "synced" and status["source"] == mirror.base


# ── unpublished years ─────────────────────────────────────────────────────────────────────────────


async def test_an_empty_year_reads_not_published_yet(tmp_path: Path, mirror: HolidayMirror) -> None:
    store = store_for(tmp_path, mirror.holidays(), Clock(bj(2027, 3, 1, 10)))
    status = await store.sync()
    assert status["year"] == 2027 and status["published"] is False
    assert status["not_published_yet"] is True and status["label"] == "Not published yet"
    assert status["holidays"] == 0
    # ...and 2027 follows the weekday rule: New Year's Day 2027 is a plain Friday.
    assert store.policy(PeakConfig()).is_peak(bj(2027, 1, 1, 10))


async def test_a_404_for_next_year_is_not_published_yet(tmp_path: Path, mirror: HolidayMirror) -> None:
    mirror.not_found = {2027}
    store = store_for(tmp_path, mirror.holidays())
    status = await store.sync()
    assert status["status"] == "synced" and status["last_error"] is None
    report = calendar_report(store, date(2027, 6, 1))
    assert report["not_published_yet"] is True and report["years"]["2027"]["published"] is False
    assert report["years"]["2026"]["papers"] == raw_doc(2026)["papers"]
    orjson.dumps(report)  # JSON-safe for --json and the admin API


async def test_a_404_for_the_current_year_is_a_failure(tmp_path: Path, mirror: HolidayMirror) -> None:
    mirror.not_found = {2026}
    status = await store_for(tmp_path, mirror.holidays()).sync()
    assert status["status"] == "failed" and status["not_published_yet"] is True
    assert status["last_error"]["message"] == "HTTP 404" and status["last_error"]["year"] == 2026


async def test_an_empty_answer_never_clobbers_a_published_year(tmp_path: Path, mirror: HolidayMirror) -> None:
    store = store_for(tmp_path, mirror.holidays())
    await store.sync()
    mirror.not_found = {2026}
    await store.sync(force=True)
    assert store.calendar.years[2026].published


# ── failures never break routing ──────────────────────────────────────────────────────────────────


async def test_a_500_keeps_routing_on_the_cache_and_records_the_error(
    tmp_path: Path, mirror: HolidayMirror
) -> None:
    clock = Clock(NOW)
    store = store_for(tmp_path, mirror.holidays(), clock)
    await store.sync()
    before = default_cache_path(tmp_path).read_bytes()
    mirror.fail_status = 500
    clock.advance_days(1)
    status = await store.sync(force=True)
    assert status["status"] == "failed"
    error = status["last_error"]
    assert error["message"] == "HTTP 500" and error["source"] == "url_template"
    assert error["url"].startswith(mirror.base) and error["at"] is not None
    assert not store.policy(PeakConfig()).is_peak(bj(2026, 10, 1, 10))  # National Day still idle
    assert status["last_update"] == NOW.isoformat()  # the data is still the first fetch
    after = cache_json(tmp_path)
    assert after["years"] == orjson.loads(before)["years"] and after["last_error"] is not None


async def test_the_next_sync_retries_after_a_failure(tmp_path: Path, mirror: HolidayMirror) -> None:
    store = store_for(tmp_path, mirror.holidays())
    await store.sync()
    mirror.fail_status = 502
    assert (await store.sync(force=True))["status"] == "failed"
    mirror.fail_status = None
    mirror.requests.clear()
    assert store.due_years() == [2026, 2027]  # fresh data, but the failure is retried
    assert (await store.sync())["status"] == "synced"
    assert sorted(mirror.requests) == [2026, 2027]


async def test_connection_refused_keeps_the_cache(tmp_path: Path, mirror: HolidayMirror) -> None:
    store = store_for(tmp_path, mirror.holidays())
    await store.sync()
    store.configure(HolidaysConfig(url_template=closed_port_url()))
    status = await store.sync(force=True)
    assert status["status"] == "failed" and "Connect" in status["last_error"]["message"]
    assert not store.policy(PeakConfig()).is_peak(bj(2026, 10, 1, 10))


async def test_first_run_without_cache_or_network_follows_the_weekday_rule(tmp_path: Path) -> None:
    store = store_for(tmp_path, HolidaysConfig(url_template=closed_port_url()), sleep=ManualSleep())
    await store.start(wait=True)
    try:
        assert store.calendar.years == {}
        p = store.policy(PeakConfig())
        assert p.is_peak(bj(2026, 10, 1, 10))  # a plain Thursday without the calendar
        assert not p.is_peak(bj(2026, 2, 14, 10))  # a plain Saturday
        status = store.status()
        assert status["status"] == "failed" and status["years_loaded"] == []
    finally:
        await store.stop()


async def test_an_invalid_document_is_a_failed_fetch(tmp_path: Path, mirror: HolidayMirror) -> None:
    mirror.body_override = b"<html>captive portal</html>"
    status = await store_for(tmp_path, mirror.holidays()).sync()
    assert status["status"] == "failed" and status["last_error"]["message"].startswith("invalid document")


async def test_the_jsdelivr_failure_falls_back_to_raw_github(tmp_path: Path) -> None:
    urls: list[str] = []

    async def fetch(url: str) -> tuple[int, bytes]:
        urls.append(url)
        if "jsdelivr" in url:
            raise OSError("cdn unreachable")
        year = int(url.rsplit("/", 1)[1].removesuffix(".json"))
        return 200, orjson.dumps(raw_doc(year))

    status = await store_for(tmp_path, HolidaysConfig(), fetch=fetch).sync()
    assert status["status"] == "synced" and status["source"] == "raw-github" and status["last_error"] is None
    assert [e["source"] for e in status["source_errors"]] == ["jsdelivr", "jsdelivr"]
    assert sorted(urls) == sorted(
        [
            "https://cdn.jsdelivr.net/gh/NateScarlet/holiday-cn@master/2026.json",
            "https://cdn.jsdelivr.net/gh/NateScarlet/holiday-cn@master/2027.json",
            "https://raw.githubusercontent.com/NateScarlet/holiday-cn/master/2026.json",
            "https://raw.githubusercontent.com/NateScarlet/holiday-cn/master/2027.json",
        ]
    )


async def test_an_unknown_source_fails_without_raising(tmp_path: Path) -> None:
    status = await store_for(tmp_path, HolidaysConfig(source="nager")).sync()
    assert status["status"] == "failed" and "unknown holidays.source" in status["last_error"]["message"]


# ── sync off ──────────────────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("holidays", [{"sync": False}, {"source": "off"}])
async def test_sync_off_fetches_nothing(
    tmp_path: Path, mirror: HolidayMirror, holidays: dict[str, object]
) -> None:
    sleep = ManualSleep()
    store = store_for(tmp_path, mirror.holidays(**holidays), sleep=sleep)
    await store.start(wait=True)
    try:
        await sleep.entered.get()  # the loop is idle, not fetching
        assert await store.sync(force=True) == store.status()
        assert mirror.requests == []
        assert store.status()["status"] == "off" and store.status()["auto_update"] is False
    finally:
        await store.stop()


# ── the cache file ────────────────────────────────────────────────────────────────────────────────


async def test_the_cache_write_is_atomic(
    tmp_path: Path, mirror: HolidayMirror, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock(NOW)
    store = store_for(tmp_path, mirror.holidays(), clock)
    await store.sync()
    path = default_cache_path(tmp_path)
    before = path.read_bytes()

    def crash(src: str, dst: str) -> None:
        # The process "dies" after writing the temporary file and before the rename.
        assert Path(src).parent == path.parent and Path(src).read_bytes()
        raise OSError("simulated crash before rename")

    monkeypatch.setattr("modelpool.periods.cache.os.replace", crash)
    clock.advance_days(1)
    status = await store.sync(force=True)
    assert path.read_bytes() == before  # the old cache, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # no partial or temporary file left
    assert "cache write failed" in status["last_error"]["message"]
    assert store.calendar.years[2026].fetched_at == clock.now  # memory still has the fresh data


async def test_a_corrupt_cache_is_ignored_with_a_recorded_error(
    tmp_path: Path, mirror: HolidayMirror
) -> None:
    path = default_cache_path(tmp_path)
    path.write_bytes(b'{"version": 1, "years": {"2026": {"doc": {"ye')
    store = store_for(tmp_path, mirror.holidays())
    store.load()
    assert store.calendar.years == {}
    assert "not valid JSON" in store.status()["last_error"]["message"]
    status = await store.sync()  # and the next sync replaces it
    assert status["status"] == "synced" and cache_json(tmp_path)["years"]


@pytest.mark.parametrize(
    "content",
    [b"[]", b'{"version": 99}', b'{"version": 1, "years": {"2026": {"doc": {"year": 2025, "days": []}}}}'],
)
def test_a_foreign_cache_is_ignored(tmp_path: Path, content: bytes) -> None:
    default_cache_path(tmp_path).write_bytes(content)
    store = store_for(tmp_path, HolidaysConfig())
    store.load()
    assert store.calendar.years == {} and store.status()["status"] == "failed"


# ── freshness and the background refresh ──────────────────────────────────────────────────────────


async def test_cache_days_decides_when_a_year_is_refetched(tmp_path: Path, mirror: HolidayMirror) -> None:
    clock = Clock(NOW)
    store = store_for(tmp_path, mirror.holidays(cache_days=30), clock)
    await store.sync()
    mirror.requests.clear()

    clock.advance_days(29)
    assert store.due_years() == [2027]  # fresh 2026; unpublished 2027 is always re-tried
    clock.advance_days(2)
    assert store.status()["status"] == "stale"
    await store.sync()
    assert sorted(mirror.requests) == [2026, 2027]
    assert store.status()["status"] == "synced"

    # cache_days is read on every sync: a reload to 0 makes everything due at once.
    store.configure(mirror.holidays(cache_days=0))
    clock.advance_days(0.001)
    assert store.due_years() == [2026, 2027]


async def test_the_new_year_makes_next_year_reachable(tmp_path: Path, mirror: HolidayMirror) -> None:
    clock = Clock(bj(2025, 12, 30, 10))
    store = store_for(tmp_path, mirror.holidays(), clock)
    await store.sync()
    assert sorted(mirror.requests) == [2025, 2026]
    mirror.requests.clear()
    clock.now = bj(2026, 1, 1, 0, 0, 1).timestamp()
    await store.sync()
    assert mirror.requests == [2027]


async def test_background_refresh_runs_every_update_days(tmp_path: Path, mirror: HolidayMirror) -> None:
    clock, sleep = Clock(NOW), ManualSleep()
    store = store_for(tmp_path, mirror.holidays(update_days=7, cache_days=30), clock, sleep=sleep)
    await store.start()  # the first sync runs in the background
    try:
        assert await sleep.entered.get() == 7 * 86400
        assert sorted(mirror.requests) == [2026, 2027]

        mirror.requests.clear()
        clock.advance_days(7)
        sleep.release()
        assert await sleep.entered.get() == 7 * 86400
        assert mirror.requests == [2027]  # 2026 is still fresh; only the unpublished year is retried

        # The cadence is fixed at start: a reload changes cache_days at once, not update_days.
        store.configure(mirror.holidays(update_days=1, cache_days=10))
        mirror.requests.clear()
        clock.advance_days(7)
        sleep.release()
        assert await sleep.entered.get() == 7 * 86400
        assert sorted(mirror.requests) == [2026, 2027]  # 14 days > 10: refreshed
        assert sleep.delays == [7 * 86400] * 3
    finally:
        await store.stop()


async def test_a_refresh_failure_keeps_the_loop_alive(tmp_path: Path, mirror: HolidayMirror) -> None:
    clock, sleep = Clock(NOW), ManualSleep()
    store = store_for(tmp_path, mirror.holidays(), clock, sleep=sleep)
    await store.start()
    try:
        await sleep.entered.get()
        mirror.fail_status = 503
        clock.advance_days(40)
        sleep.release()
        await sleep.entered.get()
        assert store.status()["status"] == "failed"
        mirror.fail_status = None
        clock.advance_days(7)
        sleep.release()
        await sleep.entered.get()
        assert store.status()["status"] == "synced"
    finally:
        await store.stop()


def test_the_bundled_snapshot_seeds_a_first_run_without_network(tmp_path: Path) -> None:
    """A fresh install offline still knows National Day; the snapshot is replaced by the first sync."""
    store = store_for(tmp_path, HolidaysConfig(), seed=True)
    store.load()
    from datetime import date

    assert store.calendar.holidays.get(date(2026, 10, 1))
    assert date(2026, 9, 20) in store.calendar.makeup  # a 2026 make-up Sunday
    assert not default_cache_path(tmp_path).exists()  # nothing written until a sync succeeds


def test_bundled_snapshot_matches_the_shared_data() -> None:
    """The snapshot shipped in the package is the project's data, byte for byte."""
    from periods_helpers import BUNDLED_DIR, SHARED_DIR, SNAPSHOT_YEARS

    for year in SNAPSHOT_YEARS:
        bundled = (BUNDLED_DIR / f"{year}.json").read_bytes()
        assert bundled.startswith(b"{")
        if (SHARED_DIR / f"{year}.json").is_file():
            assert (SHARED_DIR / f"{year}.json").read_bytes() == bundled
