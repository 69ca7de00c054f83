"""`Catalog.route_status`: SPEC §3.1 step 1 reasons and the roster's four precedence rules."""

from __future__ import annotations

from typing import Any

from catalog_helpers import make_catalog, provider

from modelpool.catalog import Catalog, Route

PROVIDERS = [
    provider("a", ["m", "n"]),
    provider("b", ["m", "n"]),
    provider("a-vision", ["m"]),
]


def catalog(**pool: Any) -> Catalog:
    return make_catalog(PROVIDERS, pool=pool)


def status(cat: Catalog, key: str) -> tuple[bool, str | None]:
    return cat.route_status(cat.routes[key])


def test_everything_is_a_candidate_by_default_except_twins() -> None:
    cat = catalog()
    assert [status(cat, k) for k in ("a/m", "a/n", "b/m", "b/n")] == [(True, None)] * 4
    assert status(cat, "a-vision/m") == (False, "twin")
    assert cat.route_status("a/m") == (True, None)  # a key works too


def test_excluded_by_provider_or_by_model_selector() -> None:
    cat = catalog(exclude=["a"])
    assert status(cat, "a/m") == (False, "excluded")
    assert status(cat, "b/m") == (True, None)
    cat = catalog(exclude_models=["b/n", "M"])  # a route key, and a bare id matching every channel
    assert status(cat, "b/n") == (False, "excluded")
    assert status(cat, "a/m") == (False, "excluded") and status(cat, "b/m") == (False, "excluded")
    assert status(cat, "a/n") == (True, None)
    cat = catalog(exclude_models=["?/n*"])
    assert status(cat, "a/n") == (False, "excluded") and status(cat, "a/m") == (True, None)


def test_include_allowlist() -> None:
    cat = catalog(include=["b"])
    assert status(cat, "a/m") == (False, "provider")
    assert status(cat, "b/m") == (True, None)
    assert catalog(include=[]).route_status("a/m") == (True, None)


def test_switched_off_by_row_and_by_channel() -> None:
    cat = catalog(disabled=["a/m"])
    assert status(cat, "a/m") == (False, "switched-off")
    assert status(cat, "b/m") == (True, None)
    cat = catalog(disabled=["m"])  # a bare model id switches off every channel serving it
    assert status(cat, "a/m") == (False, "switched-off") and status(cat, "b/m") == (False, "switched-off")
    cat = catalog(disabled_providers=["b"])
    assert status(cat, "b/m") == (False, "switched-off") and status(cat, "b/n") == (False, "switched-off")
    assert status(cat, "a/m") == (True, None)


def test_structural_reasons_win_over_switches() -> None:
    cat = catalog(exclude=["a"], include=["b"], enabled=["a/m"], disabled=["a/m"])
    assert status(cat, "a/m") == (False, "excluded")
    cat = catalog(include=["b"], enabled=["a/m"])
    assert status(cat, "a/m") == (False, "provider")  # a row switch cannot lift the allowlist


def test_non_chat_reason_cannot_be_switched_back_on() -> None:
    cat = make_catalog([provider("p")], discovered={"p": ["bge-m3"]}, pool={"enabled": ["p/bge-m3"]})
    assert cat.route_status("p/bge-m3") == (False, "non-chat")


# --- the four precedence rules ----------------------------------------------------------------------


def test_rule1_row_enabled_outranks_a_closed_channel() -> None:
    cat = catalog(disabled_providers=["b"], enabled=["b/m"])
    assert status(cat, "b/m") == (True, None)
    assert status(cat, "b/n") == (False, "switched-off")


def test_rule2_row_disabled_outranks_an_open_channel() -> None:
    cat = catalog(disabled=["a/n"])  # channel `a` is open
    assert status(cat, "a/n") == (False, "switched-off")
    assert status(cat, "a/m") == (True, None)


def test_rule3_only_a_row_entry_lifts_the_twin_default() -> None:
    # The channel flag neither opens a twin channel nor is needed to close it.
    assert status(catalog(), "a-vision/m") == (False, "twin")
    assert status(catalog(disabled_providers=["a-vision"]), "a-vision/m") == (False, "twin")
    assert status(catalog(enabled=["a-vision/m"]), "a-vision/m") == (True, None)
    assert status(catalog(enabled=["A-Vision/M"]), "a-vision/m") == (True, None)  # case-insensitive
    assert status(catalog(enabled=["a-vision/m"], disabled_providers=["a-vision"]), "a-vision/m") == (
        True,
        None,
    )


def test_rule4_row_statement_beats_blanket_and_disabled_wins_a_tie() -> None:
    cat = catalog(disabled=["m"], enabled=["b/m"])
    assert status(cat, "b/m") == (True, None)  # route key beats the bare id covering every channel
    assert status(cat, "a/m") == (False, "switched-off")
    cat = catalog(disabled=["a/*"], enabled=["a/n"])
    assert status(cat, "a/n") == (True, None)  # and beats a glob
    cat = catalog(disabled=["a/m"], enabled=["a/m"])
    assert status(cat, "a/m") == (False, "switched-off")


def test_candidate_routes_and_unknown_route_objects() -> None:
    cat = catalog(disabled=["a/m"])
    assert [r.key for r in cat.candidate_routes(cat.pools["m"])] == ["b/m"]
    stray = Route("zz", "m", "m")
    assert cat.route_status(stray) == (True, None)  # judged by the same rules, built on the fly
