"""Time limits per route (SPEC §3.9): the top-level `timeouts`, a provider's own, a `model_info` entry's
own — the most specific wins, key by key.

Resolved once per route and config snapshot (`Runtime.route_timeouts`), never per call: an attempt reads
four attributes of a ready object, no dict is merged on the request path.
"""

from __future__ import annotations

from dataclasses import dataclass

from modelpool.catalog.build import ModelInfoIndex
from modelpool.catalog.model import Route
from modelpool.config.limits import TIMEOUT_KEYS, TimeoutsConfig
from modelpool.config.schema import Config, ProviderConfig

DEFAULT_LAYER = "default"


@dataclass(frozen=True, slots=True)
class RouteTimeouts:
    """A route's limits in force (seconds) and, per key, the layer each comes from: `default`,
    `provider`, or `model_info <key>`."""

    connect: float
    first_byte: float
    idle: float
    response: float
    layers: tuple[str, str, str, str] = (DEFAULT_LAYER,) * 4

    def layer(self, key: str) -> str:
        return self.layers[TIMEOUT_KEYS.index(key)]

    def describe(self) -> dict[str, dict[str, float | str]]:
        """`{key: {seconds, layer}}` for status and the admin API."""
        return {k: {"seconds": getattr(self, k), "layer": self.layers[i]} for i, k in enumerate(TIMEOUT_KEYS)}


def defaults(timeouts: TimeoutsConfig) -> RouteTimeouts:
    return RouteTimeouts(timeouts.connect, timeouts.first_byte, timeouts.idle, timeouts.response)


def resolve_timeouts(
    config: Config, provider: ProviderConfig | None, route: Route, index: ModelInfoIndex | None = None
) -> RouteTimeouts:
    """The route's limits: per key the model's own (the most specific `model_info` entry that sets it),
    else the provider's, else the top level's."""
    values: list[float] = [getattr(config.timeouts, k) for k in TIMEOUT_KEYS]
    layers = [DEFAULT_LAYER] * 4
    if provider is None:
        return defaults(config.timeouts)
    found = (index or ModelInfoIndex(provider.model_info)).matches(route.model_id, route.normalized)
    # Least specific first, each later layer overriding the keys it sets: the provider, then the
    # matching `model_info` entries from the last glob to the first exact key.
    overrides = [("provider", provider.timeouts)]
    overrides += [(f"model_info {key}", info.timeouts) for key, info in reversed(found)]
    for layer, over in overrides:
        if over is None:
            continue
        for i, k in enumerate(TIMEOUT_KEYS):
            value = getattr(over, k)
            if value is not None:
                values[i], layers[i] = value, layer
    connect, first_byte, idle, response = values
    return RouteTimeouts(connect, first_byte, idle, response, (layers[0], layers[1], layers[2], layers[3]))
