"""Session histories in Redis, shared by every replica: per session a list of its last `calls_kept` call
entries and a hash of its running totals (updated with HINCRBY/HINCRBYFLOAT, so replicas serving the same
session add up), and one sorted set of the sessions by last activity (`kept` newest, none older than
`ttl`; each key also expires after `ttl`)."""

from __future__ import annotations

import math
from typing import Any

import orjson

from modelpool.history.stores import Batch, HistoryStore, Limits, by_session, new_summary

_INTS = ("calls", "failed", "tokens_in", "tokens_out")
_FLOATS = ("first_at", "last_at", "cost_usd")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisHistoryStore(HistoryStore):
    name = "redis"

    def __init__(self, url: str, prefix: str) -> None:
        import redis.asyncio as aioredis

        self.client = aioredis.Redis.from_url(url, socket_timeout=2.0, socket_connect_timeout=1.0)
        self.index = f"{prefix}:sessions:index"
        self._calls = f"{prefix}:sessions:calls:"
        self._sum = f"{prefix}:sessions:sum:"

    async def add(self, batch: Batch, now: float, limits: Limits) -> None:
        ttl = max(1, math.ceil(limits.ttl))
        pipe: Any = self.client.pipeline(transaction=False)
        for sid, entries in by_session(batch).items():
            calls, summ = self._calls + sid, self._sum + sid
            pipe.rpush(calls, *(orjson.dumps(e) for e in entries))
            pipe.ltrim(calls, -limits.calls_kept, -1)
            pipe.expire(calls, ttl)
            first = min(e.get("at") or now for e in entries)
            last = max(e.get("at") or now for e in entries)
            tin = sum(e.get("tokens_in") or 0 for e in entries)
            tout = sum(e.get("tokens_out") or 0 for e in entries)
            cost = sum(e.get("cost_usd") or 0.0 for e in entries)
            failed = sum(1 for e in entries if e.get("outcome") != "ok")
            pipe.hincrby(summ, "calls", len(entries))
            for name, value in (("failed", failed), ("tokens_in", tin), ("tokens_out", tout)):
                if value:
                    pipe.hincrby(summ, name, value)
            if cost:
                pipe.hincrbyfloat(summ, "cost_usd", cost)
            pipe.hsetnx(summ, "first_at", first)
            tail = entries[-1]
            fields = {"last_at": last, "outcome": tail.get("outcome") or ""}
            for name in ("pool", "route"):
                value = next((e[name] for e in reversed(entries) if e.get(name)), None)
                if value:
                    fields[name] = value
            pipe.hset(summ, mapping=fields)
            pipe.expire(summ, ttl)
            pipe.zadd(self.index, {sid: last}, gt=True)
        pipe.zremrangebyscore(self.index, "-inf", now - limits.ttl)
        await pipe.execute()
        over = await self.client.zrange(self.index, 0, -(limits.kept + 1))
        if over:
            names = [_text(s) for s in over]
            drop: Any = self.client.pipeline(transaction=False)
            drop.zrem(self.index, *names)
            drop.delete(*(self._calls + s for s in names), *(self._sum + s for s in names))
            await drop.execute()

    async def session(self, sid: str, now: float, limits: Limits) -> dict[str, Any] | None:
        pipe: Any = self.client.pipeline(transaction=False)
        pipe.hgetall(self._sum + sid)
        pipe.lrange(self._calls + sid, 0, -1)
        raw, calls = await pipe.execute()
        summary = self._summary(sid, raw)
        if summary is None or summary["last_at"] < now - limits.ttl:
            return None
        return {"summary": summary, "calls": [orjson.loads(c) for c in calls]}

    async def summaries(self, limit: int, now: float, limits: Limits) -> list[dict[str, Any]]:
        sids = await self.client.zrevrangebyscore(self.index, "+inf", now - limits.ttl, start=0, num=limit)
        if not sids:
            return []
        names = [_text(s) for s in sids]
        pipe: Any = self.client.pipeline(transaction=False)
        for sid in names:
            pipe.hgetall(self._sum + sid)
        out = []
        for sid, raw in zip(names, await pipe.execute(), strict=True):
            summary = self._summary(sid, raw)
            if summary is not None:
                out.append(summary)
        return out

    @staticmethod
    def _summary(sid: str, raw: dict[Any, Any]) -> dict[str, Any] | None:
        if not raw:
            return None
        fields = {_text(k): _text(v) for k, v in raw.items()}
        summary = new_summary(sid, float(fields.get("first_at") or 0.0))
        for name in _INTS:
            summary[name] = int(fields.get(name) or 0)
        for name in _FLOATS:
            if name in fields:
                summary[name] = float(fields[name])
        summary["cost_usd"] = round(summary["cost_usd"], 10)
        for name in ("pool", "route", "outcome"):
            summary[name] = fields.get(name) or None
        return summary

    async def close(self) -> None:
        await self.client.aclose()
