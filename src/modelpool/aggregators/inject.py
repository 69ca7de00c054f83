"""Put the ranking into the upstream request body (SPEC §6 "Inject"; gateways.md §2.3, §5.1).

Vercel reads `providerOptions.gateway.order` from the top level of the JSON body on all three ingress
APIs (`/v1/chat/completions`, `/v1/messages`, `/v1/responses`); OpenRouter reads `provider.order`.

Routing the client asked for wins: a body that already says `order` or `only` is left alone, and so is
one that asks for `sort` (our order would be promoted ahead of the client's sort and silently replace
it) or an OpenRouter `:nitro`/`:floor` model (shorthands for a sort). `None` means "send the bytes you
have", so the relay can keep a pass-through body byte-identical.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# Keys that mean the client chose its own provider routing.
CLIENT_ROUTING_KEYS: tuple[str, ...] = ("order", "only", "sort")
_OPENROUTER_SORT_SUFFIXES = (":nitro", ":floor")


def inject_order(body: Any, kind: str, order: Iterable[str]) -> dict[str, Any] | None:
    """A copy of `body` carrying `order`, or None when the body must go out unchanged.

    The copy is shallow except along the path it writes, so the caller's dict is never mutated.
    """
    slugs = list(dict.fromkeys(s for s in order if isinstance(s, str) and s))
    if not slugs or not isinstance(body, dict):
        return None
    if kind == "vercel":
        return _vercel(body, slugs)
    if kind == "openrouter":
        return _openrouter(body, slugs)
    return None


def client_routed(body: Any, kind: str) -> bool:
    """The body already carries the client's own provider routing (so no order is injected)."""
    if not isinstance(body, dict):
        return False
    provider = body.get("provider")
    if _explicit(provider):
        # OpenRouter's object; on Vercel the `provider` shorthand (documented for `sort`) counts too.
        return True
    if kind == "vercel":
        opts = body.get("providerOptions")
        return isinstance(opts, dict) and _explicit(opts.get("gateway"))
    if kind == "openrouter":
        model = body.get("model")
        return isinstance(model, str) and model.endswith(_OPENROUTER_SORT_SUFFIXES)
    return False


def _explicit(section: Any) -> bool:
    return isinstance(section, dict) and any(section.get(k) is not None for k in CLIENT_ROUTING_KEYS)


def _vercel(body: dict[str, Any], slugs: list[str]) -> dict[str, Any] | None:
    opts = body.get("providerOptions")
    if opts is None:
        opts = {}
    gateway = opts.get("gateway") if isinstance(opts, dict) else None
    if gateway is None:
        gateway = {}
    # A non-object where we would write means the client sent something we do not understand: leave it
    # for the gateway to judge rather than overwrite it.
    if not isinstance(opts, dict) or not isinstance(gateway, dict) or client_routed(body, "vercel"):
        return None
    out = dict(body)
    out["providerOptions"] = {**opts, "gateway": {**gateway, "order": slugs}}
    return out


def _openrouter(body: dict[str, Any], slugs: list[str]) -> dict[str, Any] | None:
    provider = body.get("provider")
    if provider is None:
        provider = {}
    if not isinstance(provider, dict) or client_routed(body, "openrouter"):
        return None
    out = dict(body)
    out["provider"] = {**provider, "order": slugs}
    return out
