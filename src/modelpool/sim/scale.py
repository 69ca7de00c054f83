"""The `scale` preset: a large catalog on loopback, for issue #21's "stay flat as the catalog grows".

50 OpenAI-compatible providers × 200 models each = 10,000 routes, in one sim process (one aiohttp
listener per provider, like every fleet). 400 model names: each is offered by 3 to 30 providers, so the
gateway's natural pools (one per normalized id, SPEC §2) hold at most 30 routes:

- `scale-000` has exactly 3 routes: the pool bench/scale.py compares with a 3-provider catalog, so that
  "planning costs the same as with 3 providers" compares pools of equal size in catalogs of very different
  size;
- `scale-001` has 30 routes (the largest pool);
- the other 398 alternate around 25 routes (21–30) so the total is exactly `providers × per_provider`.

Providers take the models round-robin (model after model, the next `size` providers in a ring), so every
provider serves exactly `per_provider` models. A realistic mix rather than 50 clones: every fifth provider
lists its ids under a vendor path (`lab/scale-007`, normalized into the same pool, SPEC §2), and every
third speaks all three dialects natively.
"""

from __future__ import annotations

from modelpool.sim.spec import DIALECTS, FleetSpec, SimModel, SimProvider

SMALL_POOL = "scale-000"  # 3 routes
LARGEST_POOL = "scale-001"  # `max_pool` routes


def model_name(index: int) -> str:
    return f"scale-{index:03d}"


def pool_sizes(total: int, models: int, max_pool: int = 30, small: int = 3) -> list[int]:
    """Routes per model: `small` for the first, then sizes around the mean alternating ±4 (capped at
    `max_pool`), summing to exactly `total`."""
    rest, n = total - small, models - 1
    base, extra = divmod(rest, n)
    sizes = [base + (1 if i < extra else 0) for i in range(n)]
    spread = max(0, min(4, max_pool - base - 1, base - small))
    for i in range(0, n - 1, 2):  # a pair moves together: the sum is unchanged
        sizes[i] += spread
        sizes[i + 1] -= spread
    sizes = [min(s, max_pool) for s in sizes]
    if sum(sizes) != rest or max(sizes, default=0) > max_pool:
        raise ValueError(f"cannot spread {total} routes over {models} models with pools of ≤ {max_pool}")
    return [small, *sizes]


def assign(providers: int, per_provider: int, max_pool: int = 30) -> list[list[int]]:
    """Model indexes each provider serves: `providers × per_provider` routes over pools of ≤ `max_pool`."""
    total = providers * per_provider
    # Mean pool ≈ ⅚ of the cap (room for the spread), and enough models for the rest to fit the cap.
    models = max(-(-total // max(1, max_pool * 5 // 6)), 1 + -(-(total - 3) // max_pool))
    sizes = pool_sizes(total, models, max_pool)
    if max(sizes) > providers:
        raise ValueError(f"a pool of {max(sizes)} routes needs at least that many providers")
    served: list[list[int]] = [[] for _ in range(providers)]
    cursor = 0
    for model, size in enumerate(sizes):
        for k in range(size):  # the next `size` providers in the ring: all distinct since size ≤ providers
            served[(cursor + k) % providers].append(model)
        cursor = (cursor + size) % providers
    return served


def provider_id(index: int) -> str:
    return f"p{index:02d}"


def scale_fleet(providers: int = 50, per_provider: int = 200, max_pool: int = 30) -> FleetSpec:
    """Fast mode (no think time): what bench/scale.py and tests/scale/test_catalog_scale.py run against."""
    specs = []
    for i, models in enumerate(assign(providers, per_provider, max_pool)):
        prefix = "lab/" if i % 5 == 4 else ""
        specs.append(
            SimProvider(
                provider_id(i),
                models=[SimModel(prefix + model_name(m), output_tokens=8) for m in models],
                dialects=DIALECTS if i % 3 == 1 else None,
            )
        )
    return FleetSpec(specs, fast=True)
