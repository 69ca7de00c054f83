"""Plain data types of the catalog: routes and pools (SPEC §0, §2).

These are frozen, slotted dataclasses because the hot path reads them on every call; nothing here
validates (validation happened in the config layer).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from modelpool.config.schema import EFFORT_TIERS


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a route (or, as a union/minimum, a pool) declares. `None` means unknown."""

    context_window: int | None = None
    efforts: tuple[str, ...] | None = None
    input_modalities: tuple[str, ...] | None = None
    tools: bool | None = None

    @property
    def accepts_images(self) -> bool:
        # Unknown image support counts as text-only (SPEC §2).
        return self.input_modalities is not None and "image" in self.input_modalities


@dataclass(frozen=True, slots=True)
class Route:
    """One provider × one of that provider's model ids, written `provider_id/model_id`."""

    provider_id: str
    model_id: str
    normalized: str
    capabilities: Capabilities = field(default_factory=Capabilities)
    twin: bool = False  # provider id ends in a twin suffix: never a candidate unless switched back on
    registration: int = 0  # global registration order (provider order in config, then model order)
    key: str = field(init=False, compare=False)  # `provider_id/model_id`, computed once: read on every call

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", f"{self.provider_id}/{self.model_id}")


@dataclass(frozen=True, slots=True)
class Pool:
    """A logical model served by one or more routes; its id is what clients send as `model`."""

    id: str
    name: str
    routes: tuple[Route, ...]
    capabilities: Capabilities = field(default_factory=Capabilities)
    group: bool = False  # True when a configured group made it, False for a natural pool


def union_capabilities(routes: tuple[Route, ...] | list[Route]) -> Capabilities:
    """Pool capabilities: efforts and modalities are unions, context is the minimum, tools is any."""
    contexts = [r.capabilities.context_window for r in routes if r.capabilities.context_window]
    efforts: set[str] = set()
    efforts_known = False
    modalities: set[str] = set()
    modalities_known = False
    tools: bool | None = None
    for r in routes:
        c = r.capabilities
        if c.efforts is not None:
            efforts_known = True
            efforts.update(c.efforts)
        if c.input_modalities is not None:
            modalities_known = True
            modalities.update(c.input_modalities)
        if c.tools is not None:
            tools = bool(tools) or c.tools
    return Capabilities(
        context_window=min(contexts) if contexts else None,
        efforts=tuple(e for e in EFFORT_TIERS if e in efforts) if efforts_known else None,
        input_modalities=tuple(sorted(modalities)) if modalities_known else None,
        tools=tools,
    )
