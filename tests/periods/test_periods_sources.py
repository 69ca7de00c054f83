"""Source selection for the calendar sync (SPEC §1.5 `holidays:`)."""

from __future__ import annotations

import pytest

from modelpool.config.schema import HolidaysConfig
from modelpool.periods import JSDELIVR_TEMPLATE, RAW_GITHUB_TEMPLATE, fetching_enabled, sources_for
from modelpool.periods.sources import UnknownSourceError


def test_holiday_cn_is_jsdelivr_then_raw_github() -> None:
    sources = sources_for(HolidaysConfig())
    assert [(s.id, s.template) for s in sources] == [
        ("jsdelivr", JSDELIVR_TEMPLATE),
        ("raw-github", RAW_GITHUB_TEMPLATE),
    ]
    assert sources[0].url(2026) == "https://cdn.jsdelivr.net/gh/NateScarlet/holiday-cn@master/2026.json"
    assert sources[1].url(2026) == "https://raw.githubusercontent.com/NateScarlet/holiday-cn/master/2026.json"


def test_url_template_wins_over_source() -> None:
    holidays = HolidaysConfig(
        source="https://mirror.example/a/{year}.json", url_template="https://m.test/{year}"
    )
    assert [s.url(2027) for s in sources_for(holidays)] == ["https://m.test/2027"]


@pytest.mark.parametrize(
    "source, url",
    [
        ("https://mirror.example/hc/{year}.json", "https://mirror.example/hc/2026.json"),
        ("https://mirror.example/hc/", "https://mirror.example/hc/2026.json"),  # a directory
    ],
)
def test_a_url_source_is_a_mirror(source: str, url: str) -> None:
    (only,) = sources_for(HolidaysConfig(source=source))
    assert only.id == source and only.url(2026) == url


@pytest.mark.parametrize(
    "holidays", [{"sync": False}, {"source": "off"}, {"source": "OFF"}, {"source": False}]
)
def test_off_means_no_sources(holidays: dict[str, object]) -> None:
    cfg = HolidaysConfig.model_validate(holidays)
    assert not fetching_enabled(cfg) and sources_for(cfg) == []


def test_an_unknown_source_id_is_an_error() -> None:
    with pytest.raises(UnknownSourceError, match="holiday-cn"):
        sources_for(HolidaysConfig(source="timor"))
