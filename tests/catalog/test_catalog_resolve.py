"""`Catalog.resolve`: exact pool id → alias (globs) → exact route key → normalized match → 404."""

from __future__ import annotations

import pytest
from catalog_helpers import make_catalog, provider

from modelpool.catalog import Catalog, UnknownModel


@pytest.fixture
def cat() -> Catalog:
    return make_catalog(
        [
            provider("deepseek", ["deepseek-flash", "deepseek-v4-pro"]),
            provider(
                "vercel", kind="vercel", models=["deepseek/deepseek-v4.1-flash-1017", "zai/glm-5.3-flash"]
            ),
        ],
        aliases={
            "claude-opus*": "deepseek-v4-pro",
            "claude-*": "deepseek-v4.1-flash",
            "gpt-4o": "deepseek/deepseek-flash",
            "stale": "gone-pool",
            "deepseek-v4-pro": "glm-5.3-flash",  # never consulted: the exact pool id wins
        },
        default_groups=True,
    )


def test_exact_pool_id(cat: Catalog) -> None:
    assert cat.resolve("deepseek-v4-pro") is cat.pools["deepseek-v4-pro"]
    assert cat.resolve("deepseek-v4.1-flash").name == "DeepSeek V4.1 Flash"


def test_alias_globs_first_match_wins(cat: Catalog) -> None:
    assert cat.resolve("claude-opus-4-5-20251101").id == "deepseek-v4-pro"
    assert cat.resolve("claude-sonnet-4.5").id == "deepseek-v4.1-flash"
    assert cat.resolve("Claude-Haiku").id == "deepseek-v4.1-flash"  # globs ignore case


def test_alias_to_a_route_key(cat: Catalog) -> None:
    pool = cat.resolve("gpt-4o")
    assert pool.id == "deepseek/deepseek-flash"
    assert [r.key for r in pool.routes] == ["deepseek/deepseek-flash"]


def test_exact_alias_key_beats_an_earlier_glob() -> None:
    cat = make_catalog([provider("p", ["a", "b"])], aliases={"claude-*": "a", "claude-special": "b"})
    assert cat.resolve("claude-special").id == "b"
    assert cat.resolve("claude-other").id == "a"


def test_stale_alias_falls_through(cat: Catalog) -> None:
    with pytest.raises(UnknownModel):
        cat.resolve("stale")


def test_exact_route_key_gives_a_one_route_pool(cat: Catalog) -> None:
    key = "vercel/deepseek/deepseek-v4.1-flash-1017"
    pool = cat.resolve(key)
    assert pool.id == key and pool.name == key and not pool.group
    assert [r.key for r in pool.routes] == [key]
    assert pool.capabilities == cat.routes[key].capabilities
    assert cat.resolve(key) is pool  # built once


def test_normalized_match(cat: Catalog) -> None:
    assert cat.resolve("DeepSeek-V4-Pro").id == "deepseek-v4-pro"
    assert cat.resolve("accounts/fireworks/models/deepseek-v4-pro").id == "deepseek-v4-pro"
    assert cat.resolve("GLM-5.3-Flash").id == "glm-5.3-flash"


def test_a_merged_away_id_still_finds_its_group(cat: Catalog) -> None:
    # `deepseek-flash` has no pool of its own any more: the default group merged it.
    assert "deepseek-flash" not in cat.pools
    assert cat.resolve("deepseek-flash").id == "deepseek-v4.1-flash"
    assert cat.resolve("deepseek/deepseek-v4.1-flash-1017").id == "deepseek-v4.1-flash"


def test_unknown_model_suggests_the_closest_pools(cat: Catalog) -> None:
    with pytest.raises(UnknownModel) as info:
        cat.resolve("deepseek-v4-pri")
    err = info.value
    assert err.name == "deepseek-v4-pri"
    assert err.suggestions[0] == "deepseek-v4-pro"
    assert len(err.suggestions) == 3
    assert "deepseek-v4-pro" in str(err)
    assert isinstance(err, LookupError)


def test_unknown_model_on_an_empty_catalog() -> None:
    with pytest.raises(UnknownModel) as info:
        make_catalog([]).resolve("anything")
    assert info.value.suggestions == []
