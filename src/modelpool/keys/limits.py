"""Admission for client keys with limits (SPEC §14): pool allowlist, rpm, tpm and budgets.

A call is admitted or refused before any upstream attempt. Budgets hold under concurrency: admission
reserves the call's estimated cost (refused when spent + reserved + estimate would pass the budget) and
the end of the call settles the real cost. In one process (memory, sqlite) the check and the reservation
run without an `await` in between, so they are atomic on the event loop; the spend of past calls is read
back from the usage rows at start, so a budget survives a restart. With Redis one script does both on
the shared counters — the only round trip a call may make at its start, and only for keys with a budget.
`rpm`/`tpm` of keys without a budget are counted in the process (per replica).
"""

from __future__ import annotations

import asyncio
import calendar
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from modelpool.keys.ring import ClientKey
from modelpool.protocols.errors import ClientError

log = logging.getLogger(__name__)


class Refused(ClientError):
    """429 (a limit) or 403 (a pool the key may not use), naming the limit and when it resets."""

    def __init__(self, status: int, type: str, message: str, limit: str, resets_at: float | None) -> None:
        super().__init__(status, message, type=type)
        self.limit = limit
        self.resets_at = resets_at

    def body(self, ingress: str) -> bytes:
        extra: dict[str, Any] = {"limit": self.limit}
        if self.resets_at is not None:
            extra["resets_at"] = iso(self.resets_at)
        if ingress == "anthropic":
            return orjson.dumps(
                {"type": "error", "error": {"type": self.type, "message": self.message, **extra}}
            )
        if ingress == "gemini":  # Gemini's shape: code, message, status (429 RESOURCE_EXHAUSTED)
            status = "RESOURCE_EXHAUSTED" if self.status == 429 else "PERMISSION_DENIED"
            gemini = {"code": self.status, "message": self.message, "status": status, **extra}
            return orjson.dumps({"error": gemini})
        error = {"message": self.message, "type": self.type, "param": None, "code": self.type, **extra}
        return orjson.dumps({"error": error})

    def headers(self) -> list[tuple[bytes, bytes]]:
        if self.resets_at is None:
            return []
        return [(b"retry-after", str(max(1, int(self.resets_at - _now_hint[0]) + 1)).encode())]


_now_hint = [0.0]  # the admission clock's last reading, for Retry-After


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


_periods: dict[tuple[str, int], tuple[str, float | None]] = {}


def period_of(per: str, now: float) -> tuple[str, float | None]:
    """(period id, when it resets) for a budget period, in UTC; worked out once a minute (a datetime
    round trip per call cost more than the rest of admission)."""
    slot = (per, int(now // 60))
    found = _periods.get(slot)
    if found is None:
        if len(_periods) > 64:
            _periods.clear()
        found = _periods[slot] = _period_of(per, now)
    return found


def _period_of(per: str, now: float) -> tuple[str, float | None]:
    dt = datetime.fromtimestamp(now, UTC)
    if per == "day":
        start = dt.replace(hour=0, minute=0, second=0, microsecond=0)
        return f"day:{start:%Y-%m-%d}", (start + timedelta(days=1)).timestamp()
    if per == "month":
        days = calendar.monthrange(dt.year, dt.month)[1]
        start = dt.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        return f"month:{start:%Y-%m}", (start + timedelta(days=days)).timestamp()
    return "total", None


@dataclass(slots=True)
class Ticket:
    """What admission took for one call, given back when the call ends."""

    key: ClientKey
    reserved: float = 0.0
    period: str | None = None
    tokens: int = 0
    minute: int = 0
    shared: bool = False  # the reservation sits in Redis
    settled: bool = field(default=False)


class Limits:
    def __init__(self, shared: Any = None) -> None:
        self.spent: dict[tuple[str, str], float] = {}  # (key label, period id) → USD settled
        self.reserved: dict[tuple[str, str], float] = {}
        self.windows: dict[str, list[int]] = {}  # key label → [minute, requests, tokens]
        self.shared = shared  # a RedisBudgets when budgets are shared across replicas
        self._degraded = False

    def load(self, rows: list[tuple[str, str, str, str, list[float]]], now: float) -> None:
        """Spend of past calls from the usage rows (memory/sqlite): today, this month, in total."""
        day, _ = period_of("day", now)
        month, _ = period_of("month", now)
        for r_day, _pool, _route, label, values in rows:
            cost = values[5]
            if not cost:
                continue
            for period in ("total", f"month:{r_day[:7]}", f"day:{r_day}"):
                if period in ("total", day, month):
                    self.spent[(label, period)] = self.spent.get((label, period), 0.0) + cost

    async def admit(self, key: ClientKey, pool: str, estimate: float, tokens: int, now: float) -> Ticket:
        if key.budget is not None and self.shared is not None:
            _now_hint[0] = now
            _pool_check(key, pool)
            try:
                # Bounded by the client's own timeouts (connect 0.25 s, reply 1 s): a refused connection
                # fails at once; a slow but working Redis is waited for, so the budget still holds.
                shared_ticket: Ticket = await self.shared.admit(key, estimate, tokens, now, int(now // 60))
            except Refused:
                raise
            except Exception as exc:
                # Redis unreachable: a call never hangs on the state backend (SPEC §9). This replica
                # counts the key's spend locally until Redis answers again.
                if not self._degraded:
                    log.warning("limits: shared budgets unavailable, counting locally: %s", exc)
                self._degraded = True
            else:
                self._degraded = False
                return shared_ticket
        return self.take(key, pool, estimate, tokens, now)

    def take(self, key: ClientKey, pool: str, estimate: float, tokens: int, now: float) -> Ticket:
        """Admission in this process (no shared budget, or Redis down): the check and the reservation
        with no `await` in between, so atomic on the event loop. `Accounts.admit` calls it directly when
        nothing is shared (no coroutine more per call)."""
        _now_hint[0] = now
        _pool_check(key, pool)
        minute = int(now // 60)
        self._rate(key, tokens, now, minute)
        ticket = Ticket(key, tokens=tokens, minute=minute)
        if key.budget is not None:
            period, resets = period_of(key.budget.per, now)
            slot = (key.label, period)
            spent, held = self.spent.get(slot, 0.0), self.reserved.get(slot, 0.0)
            if over_budget(spent + held, estimate, key.budget.usd):
                raise budget_refusal(key, spent + held, estimate, resets)
            self.reserved[slot] = held + estimate
            ticket.reserved, ticket.period = estimate, period
        return ticket

    def _rate(self, key: ClientKey, tokens: int, now: float, minute: int) -> None:
        if key.rpm is None and key.tpm is None:
            return
        window = self.windows.get(key.label)
        if window is None or window[0] != minute:
            window = self.windows[key.label] = [minute, 0, 0]
        rpm, tpm = key.rpm, key.tpm
        if (rpm is not None and window[1] >= rpm) or (tpm is not None and window[2] + tokens > tpm):
            rate_check(key, window[1], window[2], tokens, minute)  # refuses, naming the limit
        window[1] += 1
        window[2] += tokens

    def settle(self, ticket: Ticket, cost: float | None, tokens: int | None) -> None:
        """The call ended: its real cost replaces the reservation (the estimate when the upstream
        reported no usage — better a budget charged an estimate than one that never fills)."""
        if ticket.settled:
            return
        ticket.settled = True
        real = ticket.reserved if cost is None else cost
        if tokens is not None and (ticket.key.tpm is not None):
            window = self.windows.get(ticket.key.label)
            if window is not None and window[0] == ticket.minute:
                window[2] += tokens - ticket.tokens
        if ticket.shared:
            self.shared.settle(ticket, real, tokens)
            return
        if ticket.period is None:
            return
        slot = (ticket.key.label, ticket.period)
        self.reserved[slot] = max(0.0, self.reserved.get(slot, 0.0) - ticket.reserved)
        self.spent[slot] = self.spent.get(slot, 0.0) + real

    def spend(self, key: ClientKey, now: float) -> dict[str, Any]:
        """What `modelpool keys` shows for one key (this process's view for local budgets)."""
        out: dict[str, Any] = {}
        if key.budget is not None:
            period, resets = period_of(key.budget.per, now)
            slot = (key.label, period)
            out = {
                "period": period,
                "spent_usd": round(self.spent.get(slot, 0.0), 10),
                "reserved_usd": round(self.reserved.get(slot, 0.0), 10),
                "resets_at": iso(resets) if resets else None,
            }
        return out


def _pool_check(key: ClientKey, pool: str) -> None:
    if not key.may_use(pool):
        raise Refused(
            403,
            "forbidden",
            f"key {key.label!r} may not use pool {pool!r} (allowed: {', '.join(key.pools or ())})",
            "pools",
            None,
        )


def over_budget(held: float, estimate: float, budget: float) -> bool:
    """Refuse the call that would pass the budget; with no estimate (no known price), refuse once the
    budget is used up."""
    return held + estimate > budget or held >= budget


def budget_refusal(key: ClientKey, held: float, estimate: float, resets: float | None) -> Refused:
    assert key.budget is not None
    when = f"; resets at {iso(resets)}" if resets else " (a total budget never resets)"
    return Refused(
        429,
        "budget_exceeded",
        f"key {key.label!r}: budget ${key.budget.usd:g} per {key.budget.per} would be exceeded "
        f"(spent and reserved ${held:.6f}, this call estimated ${estimate:.6f}){when}",
        f"budget {key.budget.usd:g} USD per {key.budget.per}",
        resets,
    )


def rate_check(key: ClientKey, requests: int, used_tokens: int, tokens: int, minute: int) -> None:
    resets = (minute + 1) * 60.0
    if key.rpm is not None and requests + 1 > key.rpm:
        raise Refused(
            429,
            "rate_limited",
            f"key {key.label!r}: rpm {key.rpm} reached; resets at {iso(resets)}",
            f"rpm {key.rpm}",
            resets,
        )
    if key.tpm is not None and used_tokens + tokens > key.tpm:
        raise Refused(
            429,
            "rate_limited",
            f"key {key.label!r}: tpm {key.tpm} would be exceeded ({used_tokens} used this minute, this call "
            f"~{tokens}); resets at {iso(resets)}",
            f"tpm {key.tpm}",
            resets,
        )


def spawn(coro: Any) -> None:
    """Run a settlement in the background; errors are logged, never raised into a finished call."""
    task = asyncio.ensure_future(coro)
    _tasks.add(task)
    task.add_done_callback(_done)


_tasks: set[asyncio.Future[Any]] = set()


def _done(task: asyncio.Future[Any]) -> None:
    _tasks.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.warning("limits: settlement failed: %s", task.exception())
