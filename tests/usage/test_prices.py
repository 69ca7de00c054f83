"""Prices (SPEC §14) without a server: config validation, which price a route gets (model_info, provider,
library, off), the period and library windows in force, and the cost of a usage dict."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from modelpool.config import ConfigError, load_config
from modelpool.gateway import Gateway
from modelpool.keys.limits import period_of
from modelpool.pricing import Price, library

PEAK_AT = datetime(2026, 11, 25, 2, 0, tzinfo=UTC).timestamp()  # Wed 10:00 Beijing
OFF_AT = datetime(2026, 11, 25, 12, 0, tzinfo=UTC).timestamp()  # Wed 20:00 Beijing
SUNDAY_PEAK_HOUR = datetime(2026, 11, 29, 2, 0, tzinfo=UTC).timestamp()  # Sun 10:00 Beijing


def gateway(providers: list[dict[str, Any]], **extra: Any) -> Gateway:
    cfg = {"state": {"backend": "memory"}, "holidays": {"source": "bundled"}, "providers": providers, **extra}
    return Gateway(load_config(cfg), env={})


def provider(pid: str, **kw: Any) -> dict[str, Any]:
    return {"id": pid, "base_url": "http://127.0.0.1:9/v1", "api_key": "x", "models": ["m1", "big-1"], **kw}


def test_cost_counts_fresh_cached_written_and_output_tokens() -> None:
    price = Price.per_million(2.0, 8.0, cached_input=0.5, cache_write=2.5)
    usage = {"prompt_tokens": 100, "cached_tokens": 60, "cache_creation_tokens": 10, "completion_tokens": 7}
    assert price.cost(usage) == pytest.approx((30 * 2 + 60 * 0.5 + 10 * 2.5 + 7 * 8) / 1e6)
    assert Price.per_million(2.0, 8.0).cost(usage) == pytest.approx((100 * 2 + 7 * 8) / 1e6)  # no cache price


def test_config_validates_prices_and_key_objects() -> None:
    load_config(
        {"server": {"api_keys": ["a", {"key": "b", "name": "t", "budget": {"usd": 5, "per": "month"}}]}}
    )
    for bad in (
        {"server": {"api_keys": [{"key": "b", "budget": {"usd": 0}}]}},
        {"server": {"api_keys": [{"key": "b", "budget": {"usd": 1, "per": "week"}}]}},
        {"server": {"api_keys": [{"name": "no key"}]}},
        {"providers": [provider("p", prices={"input": 1.0})]},  # output missing
        {"providers": [provider("p", prices={"input": -1.0, "output": 1.0})]},
        {"prices": {"source": "somewhere"}},
    ):
        with pytest.raises(ConfigError):
            load_config(bad)


def test_model_info_beats_provider_beats_library_and_off_turns_it_off() -> None:
    gw = gateway(
        [
            provider(
                "p",
                prices={"input": 1.0, "output": 2.0},
                model_info={"big-*": {"prices": {"input": 3.0, "output": 9.0}}},
            ),
            provider("q", prices={"source": "off"}),
            provider("openai", base_url="https://api.openai.com/v1", models=["gpt-4o"]),
        ]
    )
    book = gw.runtime.prices()
    library.load()
    assert book.price("p/m1", OFF_AT).input * 1e6 == pytest.approx(1.0)
    assert book.price("p/big-1", OFF_AT).output * 1e6 == pytest.approx(9.0)
    assert book.price("q/m1", OFF_AT) is None
    gpt = book.price("openai/gpt-4o", OFF_AT)
    assert gpt is not None and gpt.source.startswith("genai-prices openai/gpt-4o")
    off = gateway([provider("openai", base_url="https://api.openai.com/v1", models=["gpt-4o"])],
                  prices={"source": "off"})  # fmt: skip
    assert off.runtime.prices().price("openai/gpt-4o", OFF_AT) is None


def test_a_local_model_costs_nothing_unless_prices_say_so() -> None:
    """`kind: llamacpp` gets no library price even for a model id and provider id the library knows; its
    own `prices` still apply."""
    library.load()
    local = dict(base_url="http://127.0.0.1:8080", models=["gpt-4o"])
    gw = gateway([provider("openai", kind="llamacpp", **local), provider("mine", kind="llamacpp",
                  prices={"input": 0.1, "output": 0.2}, **local)])  # fmt: skip
    book = gw.runtime.prices()
    assert book.price("openai/gpt-4o", OFF_AT) is None
    assert book.price("mine/gpt-4o", OFF_AT).output * 1e6 == pytest.approx(0.2)
    remote = gateway([provider("openai", kind="openai", **local)]).runtime.prices()
    assert remote.price("openai/gpt-4o", OFF_AT) is not None  # the same route as `kind: openai` is priced


def test_period_prices_follow_the_calendar_and_library_windows_their_own_clock() -> None:
    period = {"peak": {"input": 2.0, "output": 4.0}, "off_peak": {"input": 0.5, "output": 1.0}}
    gw = gateway([provider("p", prices=period), provider("deepseek", models=["deepseek-v4-flash"])])
    library.load()
    book = gw.runtime.prices()
    assert book.price("p/m1", PEAK_AT).input * 1e6 == pytest.approx(2.0)
    assert book.price("p/m1", OFF_AT).input * 1e6 == pytest.approx(0.5)
    assert book.price("p/m1", SUNDAY_PEAK_HOUR).input * 1e6 == pytest.approx(0.5)  # §7: not a working day
    ds = "deepseek/deepseek-v4-flash"
    assert book.price(ds, PEAK_AT).input * 1e6 == pytest.approx(0.3)  # DeepSeek's own window, in UTC
    assert book.price(ds, OFF_AT).input * 1e6 == pytest.approx(0.15)
    assert book.price(ds, SUNDAY_PEAK_HOUR).input * 1e6 == pytest.approx(0.3)  # the library: every day
    pricer = book.pricer(PEAK_AT)  # a call's prices stay those of its start
    assert pricer("p/m1").input * 1e6 == pytest.approx(2.0)


def test_budget_periods_are_utc_and_name_their_reset() -> None:
    at = datetime(2026, 12, 31, 23, 59, tzinfo=UTC).timestamp()
    assert period_of("day", at) == ("day:2026-12-31", datetime(2027, 1, 1, tzinfo=UTC).timestamp())
    assert period_of("month", at) == ("month:2026-12", datetime(2027, 1, 1, tzinfo=UTC).timestamp())
    assert period_of("total", at) == ("total", None)
