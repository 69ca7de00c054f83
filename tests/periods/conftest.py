"""Fixtures for tests/periods: the loopback holiday-cn mirror over the shared data snapshot."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from periods_helpers import HolidayMirror, data_dir


@pytest.fixture(scope="session", autouse=True)
def _snapshot_present() -> None:
    try:
        data_dir()
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture
async def mirror() -> AsyncIterator[HolidayMirror]:
    m = HolidayMirror(data_dir())
    app = web.Application()
    app.router.add_get(r"/{year:\d{4}}.json", m.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    m.base = f"http://127.0.0.1:{port}"
    try:
        yield m
    finally:
        await runner.cleanup()
