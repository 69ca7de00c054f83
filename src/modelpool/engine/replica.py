"""Applying other replicas' changes (from a shared backend's change feed) to this gateway's memory.

The gateway keeps routing on local memory; this is the one place where shared changes land in it:
health records and rests (`health`), sticky and operator pins (`pins`), the dashboard layer with its
roster switches (`dashboard`), the round-robin cursors (`counters`) and the fleet view (`live.*`:
other replicas' sessions, events, watchers and answers, see `modelpool.fleet`). Nothing here persists back —
the change already is in the shared store.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Protocol

from modelpool.fleet import FleetView
from modelpool.health.quota import SHARED_NS as QUOTA_NS
from modelpool.health.quota import QuotaBook
from modelpool.health.registry import HealthRegistry
from modelpool.routing.planner import Planner
from modelpool.routing.sticky import PinStore
from modelpool.signers import SignerBook

log = logging.getLogger(__name__)

CURSOR_PREFIX = "cursor:"


class Host(Protocol):
    """The engine's memory that shared changes land in (`engine.core.Engine`)."""

    health: HealthRegistry
    pins: PinStore
    signers: SignerBook
    planner: Planner
    quota: QuotaBook
    fleet: FleetView
    dashboard_layer: dict[str, Any]
    clock: Callable[[], float]

    async def reapply_layers(self) -> None: ...


class ReplicaApplier:
    def __init__(self, gw: Host) -> None:
        self.gw = gw
        self._reapply: asyncio.Task[None] | None = None

    def __call__(self, namespace: str, key: str, value: Any) -> None:
        gw = self.gw
        if namespace == "health":
            gw.health.replace(key, value if isinstance(value, dict) else None)
        elif namespace == "pins":
            gw.pins.apply(key, value, gw.clock())
        elif namespace == "signers":
            gw.signers.apply(key, value)
        elif namespace == "dashboard":
            self._dashboard(key, value)
        elif namespace == "counters" and key.startswith(CURSOR_PREFIX) and isinstance(value, int):
            gw.planner.set_cursor(key[len(CURSOR_PREFIX) :], value)
        elif namespace == QUOTA_NS:  # SPEC §3.8: a route another replica saw run short (or recover)
            gw.quota.apply_shared(key, value)
        elif namespace.startswith("live."):  # the fleet view: sessions, events, watchers, answers
            gw.fleet.apply(namespace, key, value)

    def _dashboard(self, key: str, value: Any) -> None:
        layer = dict(self.gw.dashboard_layer)
        if value is None:
            layer.pop(key, None)
        else:
            layer[key] = value
        if layer == self.gw.dashboard_layer:
            return
        self.gw.dashboard_layer = layer
        # A setting arrives one key per message: rebuild the runtime once for a burst of them.
        if self._reapply is None or self._reapply.done():
            self._reapply = asyncio.get_running_loop().create_task(self._rebuild())

    async def _rebuild(self) -> None:
        await asyncio.sleep(0.01)  # let the rest of the burst land first
        try:
            await self.gw.reapply_layers()
        except Exception:  # a layer this version cannot apply must not stop the feed
            log.exception("could not apply the dashboard settings changed by another replica")


def cursor_key(pool_id: str) -> str:
    return CURSOR_PREFIX + pool_id
