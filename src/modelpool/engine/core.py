"""`Engine`: the routing core assembled — configuration, catalog, health, state, planner, the walk and its
relays — with no HTTP server and no metrics (those are faces over it: `server/`, `observe/`, and the
library's `Gateway` in `modelpool.gateway`).

It owns the long-lived parts (upstream pool, health registry, state backend, discovery, config watcher)
and an immutable `Runtime` snapshot that is swapped whenever the effective configuration changes.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Self

from modelpool.aggregators import AggregatorService, RoutingRecord
from modelpool.aggregators.priors import CandidatePriors
from modelpool.catalog.reuse import CatalogCache
from modelpool.config import (
    ConfigError,
    LoadedConfig,
    apply_layers,
    apply_layers_lenient,
    load_config,
    resolve_api_key,
    state_dir,
)
from modelpool.engine.accounts import Accounts
from modelpool.engine.observer import CallObserver, NoObserver
from modelpool.engine.rediscovery import DiscoveryRetry
from modelpool.engine.replica import ReplicaApplier, cursor_key
from modelpool.engine.responses import continue_response
from modelpool.engine.walks import call_walker
from modelpool.events import EventBus, LastPlans, LiveRoute, SessionLog
from modelpool.fleet import FleetView
from modelpool.health.quota import SHARED_NS as QUOTA_NS
from modelpool.health.quota import QuotaBook, reserve_in_force
from modelpool.health.registry import HealthRegistry
from modelpool.hedge.policy import HedgeBudget
from modelpool.history import SessionHistory, create_history_store
from modelpool.offloop import build_off_loop, settle_heap
from modelpool.periods import CalendarStore, default_cache_path
from modelpool.routing.call import Call, Candidate
from modelpool.routing.measurements import RegistryMeasurements
from modelpool.routing.planner import Planner
from modelpool.routing.prepare import prepare_call
from modelpool.routing.response_book import ResponseBook
from modelpool.routing.sticky import PinStore
from modelpool.runtime import Runtime
from modelpool.signers import SignerBook
from modelpool.state import StateBackend, create_backend
from modelpool.upstream.client import UpstreamClient
from modelpool.upstream.discovery import Discovery
from modelpool.upstream.providers import ProviderEndpoint, build_endpoint
from modelpool.walk.consent import QuestionBoard
from modelpool.walk.walker import Walker
from modelpool.walk.wiring import GatewaySink

log = logging.getLogger("modelpool")


class Engine:
    def __init__(
        self,
        loaded: LoadedConfig,
        env: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.loaded = loaded
        self.clock = clock  # injectable for tests of rests and expiries
        self.env = dict(os.environ if env is None else env)
        self.state_dir: Path = state_dir(loaded.config)
        self.dashboard_layer: dict[str, Any] = {}
        self.config_error: ConfigError | None = None
        state_cfg = loaded.config.state
        if "path" not in state_cfg.model_fields_set and os.environ.get("MODELPOOL_STATE_DIR"):
            # The state dir override moves the default sqlite file too (tests, containers never write to
            # ~/.local/state); a path the config names is kept.
            state_cfg = state_cfg.model_copy(update={"path": str(self.state_dir / "state.db")})
        self.state: StateBackend = create_backend(state_cfg, self.state_dir)
        self.client = UpstreamClient(loaded.config.timeouts)
        self.discovery = Discovery(self.client)
        self._discovery_retry = DiscoveryRetry(lambda: bool(self.discovery.errors), self.rediscover)
        self.health = HealthRegistry(
            lambda: self.runtime.config.pool,
            clock=clock,
            persist=self._persist_health if self.state.durable else None,
            forget=lambda key: self.state.delete("health", key),
        )
        self.pins = PinStore(
            persist=(lambda key, value: self.state.put("pins", key, value)) if self.state.durable else None,
            forget=lambda key: self.state.delete("pins", key),
        )
        self.signers = SignerBook(  # SPEC §3.10: which route signed what, for as long as a session lives
            persist=(lambda key, val: self.state.put("signers", key, val)) if self.state.durable else None,
            limits=lambda: self.runtime.config.sessions,
            clock=clock,
        )
        self.aggregators = AggregatorService(
            lambda: self.client.session, lambda: self.runtime.config.gateway_ranking, clock=clock
        )
        self.priors = CandidatePriors(self.aggregators)
        # SPEC §3.8: the rate-limit headers of every reply; lowness shared with the other replicas.
        self.quota = QuotaBook(
            lambda: reserve_in_force(self.runtime),
            clock=clock,
            share=(lambda route, value, ttl: self.state.share(QUOTA_NS, route, value, ttl))
            if self.state.shared
            else None,
        )
        self.client.quota = self.quota
        self.planner = Planner(
            RegistryMeasurements(self.health),
            self.health.is_resting,
            self.pins,
            prior_tps=self.priors.prior_tps,
            prior_ttft=self.priors.prior_ttft,
            any_resting=self.health.any_resting,
            quota=self.quota,
        )
        # Shared state (redis): other replicas' changes land in local memory; the round-robin cursor
        # steps are counted globally (in the background, never on the call).
        self.replica = ReplicaApplier(self)
        self.state.set_listener(self.replica)
        if self.state.shared:
            self.planner.on_advance = lambda pool, at: self.state.bump("counters", cursor_key(pool), at)
        self.events = EventBus()
        self.hedge_budget = HedgeBudget()  # SPEC §3.7: hedges per minute of calls, per process
        self.sessions = SessionLog()
        self.response_book = ResponseBook()  # Responses ids → the route that stored them
        self.questions = QuestionBoard(self.events)
        self.fleet = FleetView(self.state, self.events, self.sessions, self.questions)  # shared: SPEC §9
        self.sink = GatewaySink(self.health, self.pins, self.events, clock)
        cfg = loaded.config
        self.calendar = CalendarStore(
            default_cache_path(self.state_dir), cfg.holidays, time_zone=cfg.peak.time_zone, clock=clock
        )
        self.calendar.load()  # the cached calendar (no network) before the first call is planned
        self._version = 0
        self._applying = asyncio.Lock()
        # `modelpool serve` sets it: freezing the heap is a process-wide choice a library must not make.
        self.settle_heap = False
        self._catalogs = CatalogCache()  # the last catalog, reused while its inputs are unchanged
        self.runtime: Runtime = self._build_runtime(loaded.config)
        self._watcher: Any = None
        self.started = False
        self._admin_token: str | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.last_plans: LastPlans = LastPlans()
        self.started_at = time.time()
        self.observer: CallObserver = NoObserver()  # the HTTP face's metrics and call log (observe/)
        self.accounts = Accounts(self, clock)  # client keys, limits, usage and cost (SPEC §14)
        # SPEC §8: every call of a session, in the state backend (the HTTP face feeds it, off the path)
        self.history: SessionHistory = SessionHistory(
            create_history_store(self.state), lambda: self.runtime.config.sessions, clock=clock
        )

    # ---- construction -------------------------------------------------------------------------

    @classmethod
    def from_config(
        cls, source: str | Path | dict[str, Any] | None = None, env: Mapping[str, str] | None = None
    ) -> Self:
        return cls(load_config(source, env=env), env=env)

    def _build_runtime(self, config: Any) -> Runtime:
        endpoints: dict[str, ProviderEndpoint] = {
            p.id: build_endpoint(p, resolve_api_key(p, self.env)) for p in config.providers
        }
        catalog = self._catalogs.build(config, self.discovery.models)
        self._version += 1
        store = getattr(self, "calendar", None)
        periods = (lambda: store.policy(config.peak, config.holidays)) if store is not None else None
        return Runtime(
            config=config, catalog=catalog, endpoints=endpoints, version=self._version, periods=periods
        )

    async def start(self, watch: bool = True) -> None:
        if self.started:
            return
        self.loop = asyncio.get_running_loop()
        await self.state.start()
        self._ensure_admin_token()
        self.health.load(
            await self.state.load("health"), self.clock(), persist_ttl=self.loaded.config.state.persist_ttl
        )
        self.pins.load(await self.state.load("pins"), self.clock())
        self.signers.load(await self.state.load("signers"))
        self.dashboard_layer = await self.state.load("dashboard")
        for key, value in (await self.state.load("counters")).items():
            self.replica("counters", key, value)
        await self.fleet.start()
        self.observer.start_tracing(self.loaded.config.tracing)  # SPEC §1.2: only when configured
        await self._apply(self.loaded, rediscover=True)
        self._discovery_retry.check()
        await self.accounts.start()
        await self.history.start()
        self.priors.warm(self.runtime)
        await self.calendar.start()
        if watch and self.loaded.path is not None:
            from modelpool.config import ConfigWatcher

            self._watcher = ConfigWatcher(
                self.loaded.path, self._on_config_change, self._on_config_error, env=self.env
            )
            await self._watcher.start()
        if self.settle_heap:  # a server process: the start-up heap is never garbage (offloop.py)
            settle_heap()
        self.started = True

    async def close(self) -> None:
        if self._watcher is not None:
            await self._watcher.stop()
            self._watcher = None
        await self._discovery_retry.stop()
        await self.calendar.stop()
        await self.aggregators.close()
        await self.client.close()
        await self.accounts.close()
        await self.history.close()
        await self.fleet.stop()
        await self.state.close()
        await asyncio.to_thread(self.observer.stop_tracing)  # flushes the last spans (bounded)
        self.started = False

    async def __aenter__(self) -> Self:
        await self.start(watch=False)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---- configuration changes ----------------------------------------------------------------

    async def _apply(self, loaded: LoadedConfig, rediscover: bool) -> None:
        async with self._applying:  # the runtime is built off the loop: one apply at a time, in order
            await self._apply_now(loaded, rediscover)

    async def _apply_now(self, loaded: LoadedConfig, rediscover: bool) -> None:
        config = loaded.config
        if self.dashboard_layer:
            # A stored dashboard value that no longer validates (e.g. after an upgrade) is dropped with a
            # warning rather than keeping the gateway from starting.
            layers = (loaded.file_layer, self.dashboard_layer)
            config, warnings = await build_off_loop(lambda a: apply_layers_lenient(*a), layers)
            for warning in warnings:
                log.warning("dashboard layer: %s", warning)
        self.client.set_timeouts(config.timeouts)
        if rediscover:
            endpoints = {p.id: build_endpoint(p, resolve_api_key(p, self.env)) for p in config.providers}
            await self.discovery.refresh(config, endpoints)
        self.loaded = loaded
        if hasattr(self, "calendar"):
            self.calendar.configure(config.holidays, config.peak.time_zone)
        self.runtime = await build_off_loop(self._build_runtime, config)
        self.sessions.limit = config.sessions.kept  # live routes: as many sessions as the history keeps
        self.config_error = None

    async def _on_config_change(self, loaded: LoadedConfig) -> None:
        try:
            await self._apply(loaded, rediscover=True)
            self._discovery_retry.check()
            self.priors.warm(self.runtime)
            log.info("config reloaded from %s (version %d)", loaded.path, self.runtime.version)
        except ConfigError as err:
            self._on_config_error(err)

    def _on_config_error(self, err: ConfigError) -> None:
        self.config_error = err
        log.error("config change rejected, keeping the last good config:\n%s", err)

    async def rediscover(self) -> None:
        await self._apply(self.loaded, rediscover=True)
        if self.started:
            self._discovery_retry.check()

    async def reapply_layers(self) -> None:
        """Rebuild the runtime from the current layers (another replica changed the dashboard layer)."""
        await self._apply(self.loaded, rediscover=False)

    async def set_dashboard(self, patch: Mapping[str, Any]) -> None:
        """Apply settings from the dashboard layer (validated; rejected patches change nothing)."""
        layer = {**self.dashboard_layer, **patch}
        layer = {k: v for k, v in layer.items() if v is not None}
        apply_layers(self.loaded.file_layer, layer)  # raises ConfigError before anything changes
        for key, value in patch.items():
            if value is None:
                self.state.delete("dashboard", key)
            else:
                self.state.put("dashboard", key, value)
        self.dashboard_layer = layer
        await self._apply(self.loaded, rediscover=False)

    @property
    def admin_token(self) -> str | None:
        return self.runtime.config.server.admin_token or self._admin_token

    def _ensure_admin_token(self) -> None:
        if self.runtime.config.server.admin_token:
            return
        from modelpool.security import load_or_create_admin_token

        self._admin_token, created = load_or_create_admin_token(self.state_dir)
        if created:
            # Printed once, on first run (SPEC §12); afterwards it is read from the state dir.
            log.warning(
                "generated admin token %s (stored in %s)", self._admin_token, self.state_dir / "admin_token"
            )

    def _persist_health(self, route_key: str, record: dict[str, Any]) -> None:
        # A shared backend always gets it: a rest found by one replica must keep the others off the route.
        if self.runtime.config.state.persist_ttl > 0 or self.state.shared:
            self.state.put("health", route_key, record)

    # ---- calls ---------------------------------------------------------------------------------

    def prepare(
        self, ingress: str, body: dict[str, Any], headers: Mapping[str, str] | None = None, raw: bytes = b""
    ) -> Call:
        """Resolve the pool and the call's context; raises `ClientError` (404) for unknown models. `raw`:
        the body's bytes as received, sent as they are by a native attempt that changes nothing."""
        call = prepare_call(self.runtime, ingress, body, headers or {})
        call.raw = raw
        if raw and len(self.signers):
            call.signers, call.signer = self.signers.of_request(raw)
        if ingress == "responses" and body.get("previous_response_id"):
            self._continue_response(call)
        return call

    def _continue_response(self, call: Call) -> None:
        continue_response(self.runtime, self.response_book, call)

    def record_response(self, call: Call, relay: Any) -> None:
        """Remember which route stored a natively served Responses reply (for `previous_response_id`)."""
        if call.ingress != "responses" or call.body.get("store") is False:
            return
        produced = relay.produced()
        served = relay.served_route
        if produced is not None and served is not None:
            self.response_book.remember(produced[0], served, produced[1])

    def walker(self, call: Call) -> Walker:
        return call_walker(self, call)

    # ---- aggregators (SPEC §3.4, §6) -------------------------------------------------------------

    def inner_order(self, call: Call, cand: Candidate) -> list[str] | None:
        """The aggregator's inner providers fastest first, or None (ranking off / stats unavailable)."""
        return self.priors.inner_order(call, cand)

    def finish(self, call: Call, walker: Walker, routing: RoutingRecord | None = None) -> None:
        """The answer's terminal event was produced: adopt the route as the session's pin and record the
        live route and the aggregator's routing record. Purpose calls never touch these (SPEC §3.6)."""
        served = walker.served
        if call.signed:
            self.signers.add(call.signed, call.session_id)
        if served is None or call.purpose or call.session_id is None:
            return
        if routing is not None:
            self.aggregators.observe(call.session_id, routing, model=served.route.model_id)
        rt = self.runtime
        if rt.config.pool.sticky and call.forced_route is None:
            lifetime = rt.cache_lifetime(served.route.provider_id)
            self.pins.set(call.session_id, call.pool.id, served.key, lifetime, now=self.clock())
        plan = self.last_plans.get(call.session_id)
        self.sessions.record(
            LiveRoute(
                session=call.session_id,
                pool=call.account_pool,  # a forced route: the pool the client named
                route=served.key,
                provider=served.route.provider_id,
                provider_name=served.endpoint.name,
                model=served.route.model_id,
                effort=walker.state.effort,
                attempts=walker.state.attempt_count,
                switched_from=walker.state.switched_from,
                at=self.clock(),
                explain=plan.explain if plan is not None else None,
            )
        )
        if self.events.watchers:
            self.events.publish(
                "served",
                keep=False,
                session=call.session_id,
                pool=call.account_pool,
                route=served.key,
                provider=served.route.provider_id,
                model=served.route.model_id,
                effort=walker.state.effort,
            )
