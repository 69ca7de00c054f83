"""`AggregatorService`: the one object the gateway holds for aggregator ranking (SPEC §3.4, §6).

One `StatsCache` per aggregator (kind × stats root), so two Vercel accounts or a Vercel and an OpenRouter
route serving the same model id never share stats. Everything on the request path is synchronous and
never waits on the network: `order_for` and `prior_tps` answer from the cache and, on a miss or stale
entry, start the background refresh that will make the next call better informed.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp

from modelpool.aggregators.ranking import Ranking, rank
from modelpool.aggregators.routing_record import AffinityExplanation, RoutingRecord, Served, ServedBy
from modelpool.aggregators.stats import (
    AGGREGATOR_KINDS,
    ModelStats,
    StatsCache,
    StatsUnavailable,
    fetch_endpoint_stats,
    stats_root,
)
from modelpool.config.schema import GatewayRankingConfig

# (kind, stats root, model, api key) → stats; the default GETs the endpoints URL with the shared session.
StatsFetch = Callable[[str, str, str, "str | None"], Awaitable[ModelStats]]


class AggregatorService:
    def __init__(
        self,
        session_getter: Callable[[], aiohttp.ClientSession],
        config_getter: Callable[[], GatewayRankingConfig],
        clock: Callable[[], float] = time.time,
        *,
        fetch: StatsFetch | None = None,
        fetch_timeout: float = 10.0,
        backoff: float = 30.0,
        max_backoff: float = 600.0,
        max_sessions: int = 256,
    ) -> None:
        self._session_getter = session_getter
        self._config = config_getter
        self._clock = clock
        self._fetch = fetch or self._http_fetch
        self.fetch_timeout = fetch_timeout
        self._backoff = (backoff, max_backoff)
        self._caches: dict[tuple[str, str], StatsCache] = {}
        self._keys: dict[tuple[str, str], str | None] = {}
        self.served = ServedBy(max_sessions=max_sessions, clock=clock)
        self._orders: dict[tuple[int, str], _OrderMemo] = {}
        self._roots: dict[tuple[str, str], tuple[str, str]] = {}  # (kind, base_url) → cache key

    # ---- request path (sync, never waits) ----------------------------------------------------------

    def order_for(
        self,
        kind: str,
        base_url: str,
        api_key: str | None,
        model: str,
        has_tools: bool = False,
        est_tokens: int = 0,
    ) -> list[str] | None:
        """Inner-provider order to inject, or None (ranking off, not an aggregator, stats unavailable)."""
        cfg = self._config()
        if not cfg.enabled:
            return None
        cache = self._cache(kind, base_url, api_key)
        stats = cache.get(model) if cache is not None else None
        if cache is None or stats is None:
            return None
        # Memoized per stats snapshot: this runs on every attempt on an aggregator route, and the order
        # depends on the call only through has_tools and which context lengths its size exceeds.
        memo = self._memo(cache, model, stats)
        key = (has_tools, float(cfg.min_uptime), memo.context_band(est_tokens))
        order = memo.orders.get(key)
        if order is None:
            order = memo.orders[key] = self._rank(stats, model, has_tools, est_tokens).order
        return list(order) if order else None

    def ranking_for(
        self,
        kind: str,
        base_url: str,
        api_key: str | None,
        model: str,
        *,
        has_tools: bool = False,
        est_tokens: int = 0,
    ) -> Ranking | None:
        cache = self._cache(kind, base_url, api_key)
        stats = cache.get(model) if cache is not None else None
        return self._rank(stats, model, has_tools, est_tokens) if stats is not None else None

    def prior_tps(
        self, kind: str, model: str, base_url: str | None = None, api_key: str | None = None
    ) -> float | None:
        """Published speed of the route's best inner provider, a prior for fastest/throughput/score.

        With `base_url` the stats of that aggregator are used (and fetched in the background when
        missing); without it, whatever any aggregator of `kind` already has cached, with no traffic.
        """
        return self._prior(kind, model, base_url, api_key)[0]

    def prior_ttft_ms(
        self, kind: str, model: str, base_url: str | None = None, api_key: str | None = None
    ) -> float | None:
        return self._prior(kind, model, base_url, api_key)[1]

    def observe(
        self, session: str | None, record: RoutingRecord | None, *, model: str | None = None,
        started_at: float | None = None,
    ) -> Served | None:  # fmt: skip
        """Remember who served a session's reply (call when the reply's terminal event went out)."""
        if not session or record is None:
            return None
        return self.served.observe(session, record, model=model, started_at=started_at)

    # ---- admin / CLI -------------------------------------------------------------------------------

    async def ranking_report(
        self,
        kind: str,
        base_url: str,
        api_key: str | None,
        model: str,
        session: str | None = None,
        *,
        timeout: float = 10.0,
        has_tools: bool = False,
        est_tokens: int = 0,
    ) -> dict[str, Any]:
        """The `modelpool rank MODEL` table and served-by line, JSON-ready (waits for stats ≤ timeout)."""
        cfg = self._config()
        report: dict[str, Any] = {
            "model": model,
            "kind": kind,
            "base_url": base_url,
            "enabled": cfg.enabled,
            "min_uptime": cfg.min_uptime,
            "available": False,
            "stats_age_s": None,
            "refreshing": False,
            "authenticated": False,
            "error": None,
            "order": [],
            "rows": [],
            "best_tps": None,
        }
        cache = self._cache(kind, base_url, api_key)
        if cache is None:
            report["error"] = f"provider kind {kind!r} publishes no endpoint stats"
        else:
            stats = await cache.get_or_fetch(model, timeout)
            age = cache.age(model)
            report["stats_age_s"] = None if age is None else round(age, 1)
            report["refreshing"] = cache.refreshing(model)
            report["error"] = cache.last_error(model)
            if stats is not None:
                ranking = self._rank(stats, model, has_tools, est_tokens)
                report.update(
                    available=True,
                    authenticated=stats.authenticated,
                    order=ranking.order,
                    rows=ranking.table,
                    best_tps=ranking.best_tps,
                )
            elif report["error"] is None:
                report["error"] = "endpoint stats not loaded yet"
        sid = session or self.served.latest_session(model)
        report["session"] = sid
        report["served_by"] = self.served_by(sid) if sid else None
        return report

    def served_by(self, session: str) -> dict[str, Any] | None:
        """The served-by line's data: who served the session's last reply and what affinity did."""
        last = self.served.latest(session)
        explanation = self.explain(session)
        if last is None or explanation is None:
            return None
        return {
            "session": session,
            "provider": last.record.final_provider,
            "model": last.model,
            "at": last.at,
            "affinity": explanation.to_dict(),
            "record": last.record.to_dict(),
        }

    def explain(self, session: str) -> AffinityExplanation | None:
        return self.served.explain_affinity(session)

    def refresh(self, model: str | None = None) -> None:
        """Drop cached stats (one model or all) and their back-off; the next use fetches again."""
        for cache in self._caches.values():
            cache.drop(model)

    def status(self) -> dict[str, Any]:
        cfg = self._config()
        return {
            "enabled": cfg.enabled,
            "stats_ttl": cfg.stats_ttl,
            "min_uptime": cfg.min_uptime,
            "fetch_failures": sum(c.failures for c in self._caches.values()),
            "sessions": len(self.served),
            "aggregators": [
                {"kind": kind, "root": root, "models": cache.status()}
                for (kind, root), cache in self._caches.items()
            ],
        }

    async def close(self) -> None:
        for cache in self._caches.values():
            await cache.close()

    # ---- internals ---------------------------------------------------------------------------------

    def _cache(self, kind: str, base_url: str, api_key: str | None) -> StatsCache | None:
        key = self._roots.get((kind, base_url))
        if key is None:
            if kind not in AGGREGATOR_KINDS:
                return None
            try:
                key = self._roots[(kind, base_url)] = (kind, stats_root(kind, base_url))
            except StatsUnavailable:
                return None
        root = key[1]
        # The newest key wins, so a config reload that rotates a key applies to the next fetch; a caller
        # without a key at hand (None) never erases one learnt from another call.
        if api_key is not None or key not in self._keys:
            self._keys[key] = api_key
        cache = self._caches.get(key)
        if cache is None:

            async def fetch(model: str) -> ModelStats:
                return await self._fetch(kind, root, model, self._keys.get(key))

            backoff, max_backoff = self._backoff
            cache = self._caches[key] = StatsCache(
                fetch,
                ttl=lambda: float(self._config().stats_ttl),
                clock=self._clock,
                backoff=backoff,
                max_backoff=max_backoff,
                fetch_timeout=self.fetch_timeout + 5.0,  # outer bound; the HTTP timeout fires first
            )
        return cache

    def _prior(
        self, kind: str, model: str, base_url: str | None, api_key: str | None
    ) -> tuple[float | None, float | None]:
        """(best tok/s, its TTFT ms) of a plain call: the planner asks per candidate per call."""
        found: tuple[StatsCache, ModelStats] | None = None
        if base_url is not None:
            cache = self._cache(kind, base_url, api_key)
            stats = cache.get(model) if cache is not None else None
            found = (cache, stats) if cache is not None and stats is not None else None
        else:
            for (k, _), c in self._caches.items():
                peeked = c.peek(model) if k == kind else None
                if peeked is not None:
                    found = (c, peeked)
                    break
        if found is None:
            return (None, None)
        memo = self._memo(found[0], model, found[1])
        min_uptime = float(self._config().min_uptime)
        prior = memo.priors.get(min_uptime)
        if prior is None:
            # The call's own tools and size only matter for the order it sends, not the route's speed.
            ranking = self._rank(found[1], model, False, 0)
            prior = memo.priors[min_uptime] = (ranking.best_tps, ranking.best_ttft_ms)
        return prior

    def _memo(self, cache: StatsCache, model: str, stats: ModelStats) -> _OrderMemo:
        key = (id(cache), model)  # caches live as long as the service: their ids are stable
        memo = self._orders.get(key)
        if memo is None or memo.stats is not stats:
            memo = self._orders[key] = _OrderMemo(stats)
        return memo

    def _rank(self, stats: ModelStats, model: str, has_tools: bool, est_tokens: int) -> Ranking:
        return rank(
            stats.endpoints,
            has_tools=has_tools,
            est_tokens=est_tokens,
            min_uptime=float(self._config().min_uptime),
            model=model,
        )

    async def _http_fetch(self, kind: str, root: str, model: str, api_key: str | None) -> ModelStats:
        return await fetch_endpoint_stats(
            self._session_getter(), kind, root, model, api_key, timeout=self.fetch_timeout
        )


class _OrderMemo:
    """Orders already computed for one stats snapshot (replaced wholesale when the stats refresh)."""

    __slots__ = ("contexts", "orders", "priors", "stats")

    def __init__(self, stats: ModelStats) -> None:
        self.stats = stats
        self.contexts = sorted({ep.context_length for ep in stats.endpoints if ep.context_length})
        self.orders: dict[tuple[bool, float, int], list[str]] = {}
        self.priors: dict[float, tuple[float | None, float | None]] = {}

    def context_band(self, est_tokens: int) -> int:
        """How many distinct context lengths are below `est_tokens`: all the order needs to know."""
        return bisect_left(self.contexts, est_tokens) if est_tokens > 0 else 0
