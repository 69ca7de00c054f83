"""The pieces that keep a catalog build flat at 10,000 routes (issue #21) give the answers the simple
versions gave: compiled selectors, the indexed `model_info`, the reused catalog, shared capabilities."""

from __future__ import annotations

import itertools

import pytest
from catalog_helpers import make_config, provider

from modelpool.catalog import build_catalog, matches_selector
from modelpool.catalog.build import ModelInfoIndex
from modelpool.catalog.filters import SelectorSet
from modelpool.catalog.reuse import CatalogCache
from modelpool.config.schema import ModelInfo

SELECTORS = [
    "deepseek-v4.1-flash*",
    "DeepSeek-Flash",
    "v/deepseek/deepseek-v4.1-flash-1017",
    " glm-5.3-flash? ",
    "*/qwen3*",
    "",
    "p?/m1",
]
ROUTES = [
    ("v/deepseek/deepseek-v4.1-flash-1017", "deepseek/deepseek-v4.1-flash-1017", "deepseek-v4.1-flash-1017"),
    ("ds/deepseek-flash", "deepseek-flash", "deepseek-flash"),
    ("z/glm-5.3-flash", "glm-5.3-flash", "glm-5.3-flash"),
    ("z/glm-5.3-flashx", "glm-5.3-flashx", "glm-5.3-flashx"),
    ("sf/Qwen/Qwen3-VL-8B", "Qwen/Qwen3-VL-8B", "qwen3-vl-8b"),
    ("p1/m1", "m1", "m1"),
    ("p10/m1", "m1", "m1"),
    ("a/b.c", "b.c", "b.c"),
]


@pytest.mark.parametrize("size", [0, 1, 2, 3, len(SELECTORS)])
def test_selector_set_agrees_with_matches_selector(size: int) -> None:
    for chosen in itertools.combinations(SELECTORS, size):
        compiled = SelectorSet(chosen)
        for key, model_id, normalized in ROUTES:
            expected = any(matches_selector(s, key, model_id, normalized) for s in chosen)
            assert compiled.matches(key, model_id, normalized) == expected, (chosen, key)


def test_model_info_index_exact_beats_glob_and_order_decides() -> None:
    info = {
        "deepseek-*": ModelInfo(context_window=1),
        " DeepSeek-Flash ": ModelInfo(context_window=2),  # exact (after strip, any case)
        "flash": ModelInfo(context_window=3),  # exact on the normalized id
        "*": ModelInfo(context_window=4),
    }
    index = ModelInfoIndex(info)
    assert index.lookup("deepseek-flash", "deepseek-flash").context_window == 2  # type: ignore[union-attr]
    assert index.lookup("deepseek-pro", "deepseek-pro").context_window == 1  # type: ignore[union-attr]
    assert index.lookup("vendor/Flash", "flash").context_window == 3  # type: ignore[union-attr]
    assert index.lookup("other", "other").context_window == 4  # type: ignore[union-attr]
    # Two exact keys for one model (its id and its normalized id): the earlier key in the config wins.
    both = ModelInfoIndex({"m": ModelInfo(tools=False), "v/m": ModelInfo(tools=True)})
    assert both.lookup("v/m", "m").tools is False  # type: ignore[union-attr]
    assert ModelInfoIndex({"x-*": ModelInfo()}).lookup("y", "y") is None


def test_catalog_cache_reuses_until_an_input_changes() -> None:
    cache = CatalogCache()
    config = make_config([provider("a", ["m1", "m2"]), provider("b", ["m1"])])
    first = cache.build(config, {})
    same = make_config([provider("a", ["m1", "m2"]), provider("b", ["m1"])])  # equal, not the same object
    assert cache.build(same, {}) is first and cache.builds == 1
    changed = make_config([provider("a", ["m1", "m2", "m3"]), provider("b", ["m1"])])
    rebuilt = cache.build(changed, {})
    assert rebuilt is not first and "m3" in rebuilt.pools and cache.builds == 2
    regrouped = make_config(
        [provider("a", ["m1", "m2", "m3"]), provider("b", ["m1"])],
        pool={"groups": [{"id": "both", "models": ["m1", "m2"]}]},
    )
    assert "both" in cache.build(regrouped, {}).pools and cache.builds == 3


def test_routes_with_equal_capabilities_share_one_object() -> None:
    info = {"*": {"context_window": 8000, "tools": True}}
    config = make_config(
        [provider("a", ["m1", "m2"], model_info=info), provider("b", ["m1"], model_info=info)]
    )
    caps = [r.capabilities for r in build_catalog(config, {}).routes.values()]
    assert all(c is caps[0] for c in caps) and caps[0].context_window == 8000


def test_a_rebuild_reuses_the_routes_of_unchanged_providers() -> None:
    cache = CatalogCache()
    before = cache.build(make_config([provider("a", ["m1"]), provider("b", ["m1", "m2"])]), {})
    # `a` gains a model: `b`'s routes keep their objects (and their order after `a`'s).
    after = cache.build(make_config([provider("a", ["m1", "m0"]), provider("b", ["m1", "m2"])]), {})
    assert after.routes["b/m2"] is before.routes["b/m2"]
    assert after.routes["a/m1"] is not before.routes["a/m1"]
    assert [r.key for r in after.pools["m1"].routes] == ["a/m1", "b/m1"]
    assert list(after.routes) == ["a/m1", "a/m0", "b/m1", "b/m2"]
    # A switch that changes verdicts (a row switched off) is seen although the routes are reused.
    off = cache.build(
        make_config([provider("a", ["m1", "m0"]), provider("b", ["m1", "m2"])], pool={"disabled": ["b/m2"]}),
        {},
    )
    assert off.routes["b/m2"] is before.routes["b/m2"]
    assert off.route_status("b/m2") == (False, "switched-off") and before.route_status("b/m2")[0]
