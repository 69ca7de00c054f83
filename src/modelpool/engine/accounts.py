"""The gateway's accounting (SPEC §14): who called (client keys), what they may do (admission), and what
every call used and cost (the usage book), tied to the call's start and end."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from modelpool.keys.limits import Limits, Ticket
from modelpool.keys.ring import ClientKey, KeyRing, presented_key
from modelpool.offloop import settle_heap
from modelpool.pricing.expected import output_estimate
from modelpool.usage import UsageBook, create_usage_store

if TYPE_CHECKING:
    from modelpool.routing.call import Call
    from modelpool.runtime import Runtime
    from modelpool.state import StateBackend

log = logging.getLogger(__name__)


class Host(Protocol):
    """What the accounts read of the engine that owns them (`engine.core.Engine`); `runtime` is read
    on every use, as a reload replaces it."""

    state: StateBackend
    runtime: Runtime
    settle_heap: bool


class Accounts:
    def __init__(self, gw: Host, clock: Callable[[], float]) -> None:
        self.gw = gw
        self.clock = clock
        self.usage = UsageBook(create_usage_store(gw.state))
        shared = None
        if gw.state.name == "redis":
            from modelpool.keys.redis_budgets import RedisBudgets

            shared = RedisBudgets(gw.state.url, gw.state.keys.prefix)  # type: ignore[attr-defined]
        self.limits = Limits(shared)
        self._warm: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self.usage.start()
        if self.gw.runtime.config.prices.source != "off":
            self._warm = asyncio.create_task(self._warm_prices(), name="modelpool-prices")
        if self.limits.shared is None:  # past spend for budgets (keys may be added by a later reload)
            try:
                self.limits.load(await self.usage.rows(), self.clock())
            except Exception as exc:  # a broken store must not keep the gateway from serving
                log.warning("usage: could not read past spend for budgets: %s", exc)

    async def _warm_prices(self) -> None:
        """Load the price library and resolve the routes' prices off the event loop (~1 s of CPU)."""
        from modelpool.pricing import library

        try:
            await asyncio.to_thread(library.load)
            await asyncio.to_thread(self.gw.runtime.prices().warm)
        except Exception as exc:  # no library prices: config prices still apply
            log.warning("prices: genai-prices could not be loaded: %s", exc)
            return
        if self.gw.settle_heap:
            # The library's tables (~15,000 objects) arrive after start-up's freeze: left in the collector's
            # reach, every full collection under load walked them again (issue #29).
            settle_heap()

    async def close(self) -> None:
        if self._warm is not None:
            self._warm.cancel()
        await self.usage.close()
        if self.limits.shared is not None:
            await self.limits.shared.close()

    def keyring(self) -> KeyRing:
        memo = self.gw.runtime.memo
        ring: KeyRing | None = memo.get("keyring")
        if ring is None:
            ring = memo["keyring"] = KeyRing(self.gw.runtime.config.server.api_keys)
        return ring

    def authenticate(self, headers: dict[str, str]) -> ClientKey | bool | None:
        """The caller's key; True when no keys are configured (open gateway); None for a wrong key."""
        ring = self.keyring()
        if not ring.required:
            return True
        return ring.match(presented_key(headers))

    async def admit(self, key: ClientKey, call: Call, size: int | None = None) -> Ticket:
        """Refuses (raises `Refused`) or reserves; only called for keys with limits. `size` is the
        request body's length in bytes: a quarter of it estimates the input tokens (JSON syntax makes it
        a slight overestimate, as a reservation should be) without walking the body; a call carrying
        images, whose base64 bytes are not tokens, is counted by the body walk instead."""
        now = self.clock()
        needs_tokens = key.budget is not None or key.tpm is not None
        if not needs_tokens:
            tokens = 0
        elif size is not None and not call.has_images:
            tokens = size // 4
        else:
            tokens = call.est_tokens
        estimate = self.estimate(call, tokens, now) if key.budget is not None else 0.0
        limits = self.limits
        if key.budget is None or limits.shared is None:  # all in this process: no await, no coroutine
            return limits.take(key, call.pool.id, estimate, tokens, now)
        return await limits.admit(key, call.pool.id, estimate, tokens, now)

    def estimate(self, call: Call, tokens_in: int, now: float) -> float:
        """The call's cost on its dearest priced route: estimated input at the uncached price plus
        `max_tokens` (else DEFAULT_OUTPUT_ESTIMATE) of output. 0 when no route of the pool is priced."""
        out = output_estimate(call.body)
        best = 0.0
        for price in self._pool_prices(call.pool, now):
            cost = tokens_in * price.input + out * price.output
            if cost > best:
                best = cost
        return best

    def _pool_prices(self, pool: Any, now: float) -> list[Any]:
        """The prices in force for a pool's routes, worked out once a minute per runtime (a period or a
        library window turns at a minute boundary)."""
        memo = self.gw.runtime.memo
        slot = ("pool_prices", pool.id)
        found = memo.get(slot)
        minute = int(now // 60)
        if found is None or found[0] != minute:
            book = self.gw.runtime.prices()
            prices = [p for r in pool.routes if (p := book.price(r.key, now)) is not None]
            found = memo[slot] = (minute, prices)
        return found[1]  # type: ignore[no-any-return]

    def finish(self, label: str, ticket: Ticket | None, walker: Any, served: str | None) -> None:
        """The call ended (any outcome): usage and cost into the book, the budget settled."""
        state = walker.state if walker is not None else None
        usage = getattr(state, "usage", None)
        cost = getattr(state, "cost", None)
        if ticket is not None:
            tokens = (usage["prompt_tokens"] + usage["completion_tokens"]) if usage else None
            self.limits.settle(ticket, cost if usage else None, tokens)
        if state is None or not hasattr(state, "pool"):
            return
        route = served or (state.attempts[-1].route if state.attempts else None)
        if route is None or (served is None and not usage):
            return
        call = getattr(walker, "call", None)
        pool = getattr(call, "account_pool", state.pool)  # a forced route counts under the pool named
        self.usage.record(self.clock(), pool, route, label, usage, cost, state.estimated)

    async def key_report(self) -> list[dict[str, Any]]:
        """`modelpool keys` / `GET /admin/keys`: every key by name, its limits and spend."""
        now = self.clock()
        rows = await self.usage.rows()
        spend: dict[str, list[float]] = {}
        for _day, _pool, _route, label, values in rows:
            acc = spend.setdefault(label, [0.0, 0.0])
            acc[0] += values[0]
            acc[1] += values[5]
        out: list[dict[str, Any]] = []
        for key in self.keyring().keys:
            entry = key.describe()
            calls, cost = spend.get(key.label, [0.0, 0.0])
            entry.update({"calls": int(calls), "cost_usd": round(cost, 10)})
            if key.budget is not None:
                if self.limits.shared is not None:
                    entry["budget_state"] = await self.limits.shared.spend(key, now)
                else:
                    entry["budget_state"] = self.limits.spend(key, now)
            out.append(entry)
        return out
