"""The `scale` preset (issue #21): 50 providers × 200 models, 10,000 routes, pools of 3 to 30."""

from __future__ import annotations

from collections import Counter

import pytest

from modelpool.catalog import normalize_model_id
from modelpool.sim import FleetThread, preset
from modelpool.sim.scale import LARGEST_POOL, SMALL_POOL, assign, pool_sizes


def test_every_provider_serves_its_share_and_pools_stay_small() -> None:
    spec = preset("scale")
    assert len(spec.providers) == 50 and {len(p.models) for p in spec.providers} == {200}
    pools = Counter(normalize_model_id(m.id) for p in spec.providers for m in p.models)
    assert sum(pools.values()) == 10_000 and len(pools) == 400
    assert pools[SMALL_POOL] == 3 and pools[LARGEST_POOL] == 30 and max(pools.values()) == 30
    # No provider lists a model twice (each pool's routes are on distinct providers).
    assert all(len({m.id for m in p.models}) == 200 for p in spec.providers)


@pytest.mark.parametrize(("providers", "per", "cap"), [(50, 200, 30), (10, 20, 6), (7, 13, 5), (40, 1, 30)])
def test_assign_is_exact_for_other_sizes(providers: int, per: int, cap: int) -> None:
    served = assign(providers, per, cap)
    assert [len(s) for s in served] == [per] * providers
    sizes = Counter(m for s in served for m in s)
    assert max(sizes.values()) <= cap and sum(sizes.values()) == providers * per


def test_pool_sizes_refuses_what_cannot_fit() -> None:
    with pytest.raises(ValueError):
        pool_sizes(10_000, 100, max_pool=30)  # 100 pools of ≤ 30 hold 3,000 routes at most


def test_the_written_config_uses_one_model_info_glob_per_provider() -> None:
    with FleetThread(preset("scale")) as ft:
        config = ft.to_config()
    first = config["providers"][0]
    assert len(first["models"]) == 200
    assert first["model_info"] == {"*": {"input": ["text"], "tools": True}}
