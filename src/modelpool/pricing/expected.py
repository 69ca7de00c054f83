"""The expected cost of a call on a candidate (SPEC §14, `cheapest`): its estimated input at the route's
cached price when the session's sticky pin is on that route (the provider's prompt cache is warm), else
at the uncached price, plus the expected output, at the prices in force now."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from modelpool.pricing.prices import Price

DEFAULT_OUTPUT_ESTIMATE = 1024  # output tokens assumed when the call names no max_tokens
MAX_FIELDS = ("max_tokens", "max_completion_tokens", "max_output_tokens")
# Gemini says it inside `generationConfig` (camelCase from Gemini CLI and raw clients, snake_case from the
# Python SDK).
GEMINI_CONFIG = ("generationConfig", "generation_config")
GEMINI_MAX = ("maxOutputTokens", "max_output_tokens")

Why = tuple[str, float]


def output_estimate(body: Mapping[str, Any]) -> int:
    """The call's output cap (every dialect's field), else DEFAULT_OUTPUT_ESTIMATE."""
    found = _first_positive(body, MAX_FIELDS)
    if found is None:
        config = next((c for name in GEMINI_CONFIG if isinstance(c := body.get(name), Mapping)), None)
        found = _first_positive(config, GEMINI_MAX) if config is not None else None
    return found if found is not None else DEFAULT_OUTPUT_ESTIMATE


def _first_positive(obj: Mapping[str, Any], names: tuple[str, ...]) -> int | None:
    for name in names:
        value = obj.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def expected(price: Price, tokens_in: int, tokens_out: int, cached: bool) -> float:
    return tokens_in * (price.cached_input if cached else price.input) + tokens_out * price.output


def expected_costs(
    pricer: Callable[[str], Price | None], tokens_in: int, tokens_out: int, pinned: str | None
) -> Callable[[str], tuple[float, Why] | None]:
    """route key → (expected USD, the reason naming the price that decided), or None (no price)."""

    def cost(route_key: str) -> tuple[float, Why] | None:
        price = pricer(route_key)
        if price is None:
            return None
        cached = route_key == pinned
        usd = expected(price, tokens_in, tokens_out, cached)
        which = "cached input" if cached else "input"
        why = f"expected ${{:.6f}} ({tokens_in} tok {which} + {tokens_out} out, {price.source})"
        return usd, (why, usd)

    return cost
