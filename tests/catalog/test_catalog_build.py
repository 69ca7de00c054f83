"""Routes, natural pools, groups and capabilities of `build_catalog`."""

from __future__ import annotations

from catalog_helpers import discover, make_catalog, make_config, provider

from modelpool.catalog import Capabilities, DiscoveredModel, build_catalog
from modelpool.config.schema import GroupConfig


def keys(routes: object) -> list[str]:
    return [r.key for r in routes]  # type: ignore[attr-defined]


# --- routes -----------------------------------------------------------------------------------------


def test_routes_from_config_and_discovery_in_registration_order() -> None:
    cat = make_catalog(
        [provider("a", ["m1", "m2", "m1"]), provider("b"), provider("c")],
        discovered={"b": ["m2", "m3"], "a": ["ignored"]},
    )
    assert list(cat.routes) == ["a/m1", "a/m2", "b/m2", "b/m3"]  # listed models beat discovery; c has none
    numbers = [r.registration for r in cat.routes.values()]
    assert numbers == sorted(numbers) and len(set(numbers)) == 4  # strictly in registration order
    assert list(cat.providers) == ["a", "b", "c"]


def test_non_chat_dropped_from_discovery_but_not_from_config() -> None:
    cat = make_catalog(
        [provider("listed", ["text-embedding-3-large", "gpt-4o"]), provider("found")],
        discovered={"found": ["text-embedding-3-large", "gpt-4o", "Z-Image-Turbo", "Qwen3-VL-8B-Instruct"]},
    )
    assert cat.non_chat == {"found/text-embedding-3-large", "found/Z-Image-Turbo"}
    assert "found/Z-Image-Turbo" in cat.routes  # kept for the roster
    assert keys(cat.pools["text-embedding-3-large"].routes) == ["listed/text-embedding-3-large"]
    assert "z-image-turbo" not in cat.pools
    assert "qwen3-vl-8b-instruct" in cat.pools
    assert cat.route_status("found/Z-Image-Turbo") == (False, "non-chat")
    assert cat.route_status("listed/text-embedding-3-large") == (True, None)


def test_declared_type_beats_the_name() -> None:
    cat = make_catalog(
        [provider("vercel", kind="vercel")],
        discovered={
            "vercel": [
                DiscoveredModel("acme/embed-chat", declared_type="language"),
                DiscoveredModel("acme/pretty-name", declared_type="image"),
                DiscoveredModel("acme/router", declared_type="text+image->text"),
            ]
        },
    )
    assert cat.non_chat == {"vercel/acme/pretty-name"}
    assert set(cat.pools) == {"embed-chat", "router"}


def test_exclude_patterns_extend_the_filter_and_invalid_ones_warn() -> None:
    config = make_config([provider("p")], pool={"exclude_patterns": ["^ACME-JUDGE", "(bad"]})
    cat = build_catalog(config, discover({"p": ["acme-judge-x", "acme-chat"]}))
    assert cat.non_chat == {"p/acme-judge-x"}
    # The config layer already drops invalid regexes; one that slips past (a hand-built config) only warns.
    config.pool.exclude_patterns.append("(bad")
    cat = build_catalog(config, discover({"p": ["acme-judge-x", "acme-chat"]}))
    assert cat.non_chat == {"p/acme-judge-x"}
    assert any("(bad" in w for w in cat.warnings)


def test_twins_stay_in_routes_but_out_of_pools() -> None:
    cat = make_catalog(
        [provider("amd", ["qwen3-vl", "qwen-vision-chat"]), provider("amd-vision", ["qwen3-vl"])],
    )
    twin = cat.routes["amd-vision/qwen3-vl"]
    assert twin.twin and not cat.routes["amd/qwen3-vl"].twin
    assert keys(cat.pools["qwen3-vl"].routes) == ["amd/qwen3-vl"]
    assert keys(cat.pools["qwen-vision-chat"].routes) == ["amd/qwen-vision-chat"]  # model name is no twin
    assert cat.route_status(twin) == (False, "twin")
    assert cat.pool_of_route("amd-vision/qwen3-vl") is None


def test_a_twin_switched_back_on_joins_its_pool() -> None:
    cat = make_catalog(
        [provider("amd", ["qwen3-vl"]), provider("amd-vision", ["qwen3-vl"])],
        pool={"enabled": ["amd-vision/qwen3-vl"]},
    )
    assert keys(cat.pools["qwen3-vl"].routes) == ["amd/qwen3-vl", "amd-vision/qwen3-vl"]
    assert cat.route_status("amd-vision/qwen3-vl") == (True, None)


# --- natural pools ----------------------------------------------------------------------------------


def test_natural_pools_by_normalized_id() -> None:
    cat = make_catalog(
        [
            provider("vercel", ["deepseek/deepseek-v4-pro", "zai/glm-4.6"]),
            provider("deepseek", ["DeepSeek-V4-Pro"]),
            provider("fireworks", ["accounts/fireworks/models/deepseek-v4-pro"]),
        ]
    )
    assert list(cat.pools) == ["deepseek-v4-pro", "glm-4.6"]
    pool = cat.pools["deepseek-v4-pro"]
    assert pool.name == "deepseek/deepseek-v4-pro"  # the first route's model id
    assert not pool.group
    assert keys(pool.routes) == [
        "vercel/deepseek/deepseek-v4-pro",
        "deepseek/DeepSeek-V4-Pro",
        "fireworks/accounts/fireworks/models/deepseek-v4-pro",
    ]
    assert cat.pool_of_route("deepseek/DeepSeek-V4-Pro") is pool


# --- groups -----------------------------------------------------------------------------------------


def test_default_groups_merge_the_flash_family_across_providers() -> None:
    cat = make_catalog(
        [
            provider("vercel", ["deepseek/deepseek-v4.1-flash-1017", "zai/glm-5.3-flash"]),
            provider("deepseek", ["deepseek-flash", "deepseek-v4-pro"]),
            provider("fw", ["accounts/fireworks/models/glm-5.3-flash-fp8"]),
        ],
        default_groups=True,
    )
    flash = cat.pools["deepseek-v4.1-flash"]
    assert flash.group and flash.name == "DeepSeek V4.1 Flash"
    assert keys(flash.routes) == ["vercel/deepseek/deepseek-v4.1-flash-1017", "deepseek/deepseek-flash"]
    assert keys(cat.pools["glm-5.3-flash"].routes) == [
        "vercel/zai/glm-5.3-flash",
        "fw/accounts/fireworks/models/glm-5.3-flash-fp8",
    ]
    # Emptied natural pools disappear; display order follows each pool's first route.
    assert list(cat.pools) == ["deepseek-v4.1-flash", "glm-5.3-flash", "deepseek-v4-pro"]
    assert cat.pool_of_route("deepseek/deepseek-flash") is flash


def test_first_come_between_groups() -> None:
    cat = make_catalog(
        [provider("p", ["alpha-1", "alpha-2", "beta"])],
        pool={
            "groups": [
                {"id": "first", "models": ["alpha-1", "beta"]},
                {"id": "second", "models": ["alpha*"]},
                {"id": "third", "models": ["beta"]},  # everything it wants is taken: no pool
            ]
        },
    )
    assert keys(cat.pools["first"].routes) == ["p/alpha-1", "p/beta"]
    assert keys(cat.pools["second"].routes) == ["p/alpha-2"]
    assert "third" not in cat.pools
    assert list(cat.pools) == ["first", "second"]


def test_merge_false_adds_a_curated_pool_and_keeps_natural_ones() -> None:
    cat = make_catalog(
        [provider("p", ["fast-a", "fast-b", "slow"]), provider("q", ["fast-a"])],
        pool={"groups": [{"id": "fast-coding", "models": ["fast-*"], "merge": False}]},
    )
    curated = cat.pools["fast-coding"]
    assert curated.group and curated.name == "fast-coding"
    assert keys(curated.routes) == ["p/fast-a", "p/fast-b", "q/fast-a"]
    assert keys(cat.pools["fast-a"].routes) == ["p/fast-a", "q/fast-a"]
    assert "fast-b" in cat.pools
    assert cat.pool_of_route("p/fast-a") is cat.pools["fast-a"]  # the natural pool stays its home


def test_exact_route_selector_claims_one_route_only() -> None:
    cat = make_catalog(
        [provider("a", ["M"]), provider("b", ["m"])],
        pool={"groups": [{"id": "only-a", "name": "Only A", "models": ["a/M"]}]},
    )
    assert keys(cat.pools["only-a"].routes) == ["a/M"]
    assert cat.pools["only-a"].name == "Only A"
    assert keys(cat.pools["m"].routes) == ["b/m"]
    assert cat.pools["m"].name == "m"  # named after the first route it kept


def test_group_named_like_a_natural_pool_replaces_it() -> None:
    cat = make_catalog(
        [provider("a", ["kimi-k2"]), provider("b", ["kimi-k2-0905", "kimi-k2"])],
        pool={"groups": [{"id": "kimi-k2", "name": "Kimi K2", "models": ["kimi-k2-0905"]}]},
    )
    pool = cat.pools["kimi-k2"]
    assert pool.group and pool.name == "Kimi K2"
    assert keys(pool.routes) == ["a/kimi-k2", "b/kimi-k2-0905", "b/kimi-k2"]
    assert list(cat.pools) == ["kimi-k2"]
    assert cat.pool_of_route("a/kimi-k2") is pool


def test_group_selector_by_pool_id_and_glob_over_route_keys() -> None:
    cat = make_catalog(
        [provider("vercel", ["deepseek/deepseek-v4-pro"]), provider("cheap", ["x-1", "x-2"])],
        pool={"groups": [{"id": "mix", "models": ["deepseek-v4-pro", "cheap/*"]}]},
    )
    assert keys(cat.pools["mix"].routes) == ["vercel/deepseek/deepseek-v4-pro", "cheap/x-1", "cheap/x-2"]
    assert list(cat.pools) == ["mix"]


def test_groups_do_not_claim_twins_or_non_chat_routes() -> None:
    cat = make_catalog(
        [provider("p"), provider("p-vision", ["m-chat"])],
        discovered={"p": ["m-chat", "m-embed"]},
        pool={"groups": [{"id": "all-m", "models": ["m-*"]}]},
    )
    assert keys(cat.pools["all-m"].routes) == ["p/m-chat"]


def test_duplicate_group_ids_extend_the_first_and_warn() -> None:
    # The config layer rejects duplicate ids; a hand-built config that has them still builds.
    config = make_config(
        [provider("p", ["a", "b"])], pool={"groups": [{"id": "g", "name": "G", "models": ["a"]}]}
    )
    config.pool.groups.append(GroupConfig(id="g", models=["b"]))
    cat = build_catalog(config, {})
    assert keys(cat.pools["g"].routes) == ["p/a", "p/b"]
    assert cat.pools["g"].name == "G"
    assert any("duplicate group id" in w for w in cat.warnings)


# --- capabilities -----------------------------------------------------------------------------------


def test_pool_capabilities_are_unions_and_a_minimum() -> None:
    cat = make_catalog(
        [
            provider(
                "a",
                ["m"],
                model_info={"m": {"context_window": 128000, "efforts": ["max", "off"], "input": ["text"]}},
            ),
            provider(
                "b",
                ["m"],
                model_info={
                    "m": {"context_window": 64000, "efforts": ["high", "low"], "input": ["image", "text"]},
                },
            ),
            provider("c", ["m"], model_info={"m": {"tools": True}}),
        ]
    )
    caps = cat.pools["m"].capabilities
    assert caps.context_window == 64000
    assert caps.efforts == ("off", "low", "high", "max")  # ordered by tier
    assert caps.input_modalities == ("image", "text")
    assert caps.tools is True
    assert caps.accepts_images
    assert cat.routes["a/m"].capabilities.efforts == ("off", "max")


def test_model_info_exact_key_beats_glob_and_first_glob_wins() -> None:
    info = {
        "deepseek-*": {"context_window": 1000},
        "deepseek-v4*": {"context_window": 2000},
        "deepseek-v4-pro": {"context_window": 3000},
    }
    cat = make_catalog([provider("p", ["deepseek-v4-pro", "deepseek-v4-lite", "other"], model_info=info)])
    assert cat.routes["p/deepseek-v4-pro"].capabilities.context_window == 3000
    assert cat.routes["p/deepseek-v4-lite"].capabilities.context_window == 1000
    assert cat.routes["p/other"].capabilities == Capabilities()


def test_model_info_globs_match_the_normalized_id_too() -> None:
    cat = make_catalog(
        [provider("v", ["deepseek/deepseek-flash"], model_info={"DEEPSEEK-*": {"tools": False}})]
    )
    assert cat.routes["v/deepseek/deepseek-flash"].capabilities.tools is False


def test_config_model_info_beats_discovered_capabilities_field_by_field() -> None:
    found = Capabilities(
        context_window=200000, efforts=("low", "high"), input_modalities=("text",), tools=True
    )
    cat = make_catalog(
        [provider("v", model_info={"*": {"context_window": 100000}}), provider("w")],
        discovered={"v": [DiscoveredModel("a/m", capabilities=found)], "w": [DiscoveredModel("m")]},
    )
    caps = cat.routes["v/a/m"].capabilities
    assert caps.context_window == 100000
    assert caps.efforts == ("low", "high") and caps.tools is True
    assert cat.routes["w/m"].capabilities == Capabilities()  # unknown
    pool_caps = cat.pools["m"].capabilities
    assert pool_caps.context_window == 100000 and pool_caps.input_modalities == ("text",)


def test_discovered_capabilities_reach_config_listed_models() -> None:
    found = Capabilities(input_modalities=("image", "text"))
    cat = make_catalog(
        [provider("v", ["a/m"])], discovered={"v": [DiscoveredModel("a/m", capabilities=found)]}
    )
    assert cat.routes["v/a/m"].capabilities.accepts_images


def test_unknown_modalities_mean_text_only() -> None:
    cat = make_catalog([provider("p", ["m"])])
    assert not cat.pools["m"].capabilities.accepts_images


def test_pool_advertises_only_what_candidates_deliver() -> None:
    cat = make_catalog(
        [
            provider("a", ["m"], model_info={"m": {"input": ["text"]}}),
            provider("b", ["m"], model_info={"m": {"input": ["text", "image"]}}),
            provider("c", ["n"], model_info={"n": {"input": ["text", "image"]}}),
        ],
        pool={"exclude": ["b", "c"]},
    )
    assert not cat.pools["m"].capabilities.accepts_images  # the image route is excluded
    assert cat.pools["n"].capabilities.accepts_images  # no candidate at all: show what the routes declare
