"""Where the calendar comes from, and how a year document is fetched (SPEC §7, §1.5 `holidays:`).

Sources, in order: `holidays.url_template` (a `{year}` template) when set; else `holidays.source` when it
is a full http(s) URL (a mirror); else the holiday-cn source id: jsDelivr, falling back to raw GitHub.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

import aiohttp

from modelpool.config.schema import HolidaysConfig

HOLIDAY_CN = "holiday-cn"
JSDELIVR_TEMPLATE = "https://cdn.jsdelivr.net/gh/NateScarlet/holiday-cn@master/{year}.json"
RAW_GITHUB_TEMPLATE = "https://raw.githubusercontent.com/NateScarlet/holiday-cn/master/{year}.json"
FETCH_TIMEOUT = 10.0  # seconds, per request
# A year document is a few KiB; a cap keeps a misbehaving mirror from filling memory.
MAX_DOCUMENT_BYTES = 1 << 20

# `fetch(url) -> (http_status, body)`; raises on network failure. Injected in tests.
Fetch = Callable[[str], Awaitable[tuple[int, bytes]]]


@dataclass(frozen=True, slots=True)
class Source:
    id: str  # shown in status: "jsdelivr", "raw-github", "url_template", or the mirror URL
    template: str

    def url(self, year: int) -> str:
        return self.template.replace("{year}", str(year))


class UnknownSourceError(ValueError):
    pass


BUNDLED = "bundled"  # the snapshot shipped with modelpool, never fetched (offline sites, the demo, tests)


def fetching_enabled(holidays: HolidaysConfig) -> bool:
    return holidays.sync and holidays.source.strip().lower() not in ("off", BUNDLED)


def sources_for(holidays: HolidaysConfig) -> list[Source]:
    """The ordered sources to try; empty when fetching is off. Raises `UnknownSourceError` for a source
    that is neither `holiday-cn`, `off`, nor a URL (the config schema accepts any string)."""
    if not fetching_enabled(holidays):
        return []
    if holidays.url_template.strip():
        return [Source("url_template", _as_template(holidays.url_template.strip()))]
    source = holidays.source.strip()
    if source.startswith(("https://", "http://")):
        return [Source(source, _as_template(source))]
    if source.lower() == HOLIDAY_CN:
        return [Source("jsdelivr", JSDELIVR_TEMPLATE), Source("raw-github", RAW_GITHUB_TEMPLATE)]
    raise UnknownSourceError(
        f"unknown holidays.source {source!r}: "
        "use 'holiday-cn', 'off', or an https:// URL template with {year}"
    )


def _as_template(url: str) -> str:
    # A URL without `{year}` names a mirror's directory: the year files live under it as {year}.json.
    return url if "{year}" in url else url.rstrip("/") + "/{year}.json"


@asynccontextmanager
async def http_fetch() -> AsyncIterator[Fetch]:
    """A fetch function backed by its own aiohttp session, closed when the sync is done.

    Its own session (not the upstream client's) so calendar traffic never shares limits, headers or
    proxies configured for model providers.
    """
    timeout = aiohttp.ClientTimeout(total=FETCH_TIMEOUT, sock_connect=FETCH_TIMEOUT)
    async with aiohttp.ClientSession(timeout=timeout, headers={"accept": "application/json"}) as session:

        async def fetch(url: str) -> tuple[int, bytes]:
            async with session.get(url, allow_redirects=True) as resp:
                body = await resp.content.read(MAX_DOCUMENT_BYTES + 1)
                if len(body) > MAX_DOCUMENT_BYTES:
                    raise ValueError(f"document larger than {MAX_DOCUMENT_BYTES} bytes")
                return resp.status, body

        yield fetch
