"""Budgets shared across replicas through Redis (SPEC §14): one Lua script checks the key's rpm/tpm and
its budget and reserves the estimate atomically; settling runs in the background after the call."""

from __future__ import annotations

from typing import Any

from modelpool.keys.limits import Refused, Ticket, budget_refusal, iso, period_of, rate_check, spawn
from modelpool.keys.ring import ClientKey

# KEYS: budget hash, rate hash. ARGV: budget, estimate, rpm, tpm, tokens, budget ttl (0: none).
ADMIT = """
local budget, est = tonumber(ARGV[1]), tonumber(ARGV[2])
local rpm, tpm, tok, ttl = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
if rpm > 0 or tpm > 0 then
  local req = tonumber(redis.call('HGET', KEYS[2], 'r') or '0')
  local used = tonumber(redis.call('HGET', KEYS[2], 't') or '0')
  if rpm > 0 and req + 1 > rpm then return {'rpm', tostring(req), '0'} end
  if tpm > 0 and used + tok > tpm then return {'tpm', tostring(req), tostring(used)} end
end
local held = tonumber(redis.call('HGET', KEYS[1], 'spent') or '0')
  + tonumber(redis.call('HGET', KEYS[1], 'reserved') or '0')
if held + est > budget or held >= budget then return {'budget', tostring(held), '0'} end
redis.call('HINCRBYFLOAT', KEYS[1], 'reserved', est)
if ttl > 0 then redis.call('EXPIRE', KEYS[1], ttl) end
if rpm > 0 or tpm > 0 then
  redis.call('HINCRBY', KEYS[2], 'r', 1)
  redis.call('HINCRBY', KEYS[2], 't', tok)
  redis.call('EXPIRE', KEYS[2], 120)
end
return {'ok', tostring(held), '0'}
"""

# KEYS: budget hash, rate hash. ARGV: reserved, real cost, token correction.
SETTLE = """
redis.call('HINCRBYFLOAT', KEYS[1], 'reserved', -tonumber(ARGV[1]))
redis.call('HINCRBYFLOAT', KEYS[1], 'spent', tonumber(ARGV[2]))
if tonumber(ARGV[3]) ~= 0 and redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('HINCRBY', KEYS[2], 't', tonumber(ARGV[3]))
end
return 1
"""

TTL = {"day": 3 * 86400, "month": 40 * 86400, "total": 0}


class RedisBudgets:
    def __init__(self, url: str, prefix: str) -> None:
        import redis.asyncio as aioredis

        self.client = aioredis.Redis.from_url(url, socket_timeout=1.0, socket_connect_timeout=0.25)
        self.prefix = prefix
        self._admit = self.client.register_script(ADMIT)
        self._settle = self.client.register_script(SETTLE)

    def _keys(self, key: ClientKey, period: str, minute: int) -> list[str]:
        return [f"{self.prefix}:budget:{key.label}:{period}", f"{self.prefix}:rate:{key.label}:{minute}"]

    async def admit(self, key: ClientKey, estimate: float, tokens: int, now: float, minute: int) -> Ticket:
        assert key.budget is not None
        period, resets = period_of(key.budget.per, now)
        args = [key.budget.usd, estimate, key.rpm or 0, key.tpm or 0, tokens, TTL[key.budget.per]]
        verdict, held, used = (_text(v) for v in await self._admit(self._keys(key, period, minute), args))
        if verdict == "rpm" or verdict == "tpm":
            rate_check(key, int(held), int(used), tokens, minute)  # raises with the right wording
        if verdict == "budget":
            raise budget_refusal(key, float(held), estimate, resets)
        if verdict != "ok":
            raise Refused(429, "rate_limited", f"limits: unexpected verdict {verdict!r}", "unknown", None)
        return Ticket(key, reserved=estimate, period=period, tokens=tokens, minute=minute, shared=True)

    def settle(self, ticket: Ticket, real: float, tokens: int | None) -> None:
        assert ticket.period is not None
        correction = (tokens - ticket.tokens) if tokens is not None and ticket.key.tpm else 0
        keys = self._keys(ticket.key, ticket.period, ticket.minute)
        spawn(self._settle(keys, [ticket.reserved, real, correction]))

    async def spend(self, key: ClientKey, now: float) -> dict[str, Any]:
        assert key.budget is not None
        period, resets = period_of(key.budget.per, now)
        raw = await self.client.hgetall(f"{self.prefix}:budget:{key.label}:{period}")  # type: ignore[misc]
        values = {_text(k): float(v) for k, v in raw.items()}
        return {
            "period": period,
            "spent_usd": round(values.get("spent", 0.0), 10),
            "reserved_usd": round(values.get("reserved", 0.0), 10),
            "resets_at": iso(resets) if resets else None,
        }

    async def close(self) -> None:
        await self.client.aclose()


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)
