"""One simulated provider = one aiohttp low-level server on its own loopback port.

Paths are accepted with or without the `/v1` prefix, so any base_url convention reaches them. A provider
serves only the dialects it speaks (`SimProvider.speaks`; 404 for the others): `POST /v1/chat/completions`
(openai), `POST /v1/messages` + `/v1/messages/count_tokens` (anthropic), `POST /v1/responses` (responses),
`/v1beta/models/{m}:generateContent|streamGenerateContent|countTokens` + `GET /v1beta/models` (gemini, its
OpenAI root at `/v1beta/openai`);
`GET /v1/models`, `GET /v1/models/{creator}/{model}/endpoints` (vercel, public), and the control surface
`POST|GET /_sim/faults`, `GET|DELETE /_sim/calls`, `GET /_sim/info`, `POST /_sim/speed`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import random
import time
import weakref
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

import orjson
from aiohttp import web
from multidict import CIMultiDictProxy

from modelpool.sim import (
    anthropic_provider,
    catalog,
    control,
    gemini_provider,
    openai_provider,
    provenance,
    responses_provider,
)
from modelpool.sim.aggregator import Aggregator, Attempt, Routing
from modelpool.sim.errors import (
    Dialect,
    SimError,
    bad_request,
    fault_error,
    not_found_model,
    previous_response_not_found,
    unauthorized,
)
from modelpool.sim.faults import FaultBook
from modelpool.sim.paths import reply_body, resolve, strip_v1
from modelpool.sim.plan import Speed, check_capabilities, make_plan, model_speed
from modelpool.sim.prompt_cache import PromptCache
from modelpool.sim.ratelimit import RateLimiter
from modelpool.sim.records import SECRET_HEADERS, CallRecord, Recorder
from modelpool.sim.request import CallRequest, parse_anthropic, parse_openai, parse_responses
from modelpool.sim.spec import STATUS_KINDS, Fault, FleetSpec, SimModel, SimProvider, scheduled_tps
from modelpool.sim.stream import abort, drive, send_body, stall

_JSON = "application/json"
_PARSERS = {"openai": parse_openai, "anthropic": parse_anthropic, "responses": parse_responses}
# The request's slot for the rate-limit headers of its reply (SPEC §3.8).
QUOTA_HEADERS: web.RequestKey[dict[str, str]] = web.RequestKey("sim.quota_headers", dict)
MAX_RESPONSE_IDS = 100_000  # stored Responses ids a provider remembers (for `previous_response_id`)


class ProviderServer:
    def __init__(self, spec: SimProvider, fleet: FleetSpec) -> None:
        self.spec = spec
        self.fast = fleet.fast
        # String seeds hash deterministically (independent of PYTHONHASHSEED).
        self._rng = random.Random(f"{fleet.seed}:{spec.id}")
        self.book = FaultBook(list(spec.faults), self._rng)
        self.limiter = RateLimiter(spec.rate_limit) if spec.rate_limit is not None else None
        self.recorder = Recorder()
        self._t0 = time.monotonic()  # schedules count from here (reset when the server starts)
        self.aggregator = Aggregator(spec, fleet.fast, self.elapsed) if spec.kind == "vercel" else None
        self.response_ids: OrderedDict[str, None] = OrderedDict()  # stored responses it produced
        self._served: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()  # answers per socket
        self.prompt_cache = PromptCache() if spec.prompt_cache else None
        self._runner: web.ServerRunner | None = None
        self._server: web.Server | None = None
        self._site: web.TCPSite | None = None
        self._host = "127.0.0.1"
        self.port: int | None = None

    # ---- lifecycle -------------------------------------------------------------------------------

    async def start(self, host: str, port: int = 0) -> int:
        # handler_cancellation: a client hang-up cancels the handler, which ends "stall forever" faults.
        server = web.Server(self.handle, handler_cancellation=True, access_log=None)
        runner = web.ServerRunner(server, shutdown_timeout=0.2)
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        await site.start()
        self._runner, self._server, self._site, self._host = runner, server, site, host
        self.port = int(runner.addresses[0][1])
        self._t0 = time.monotonic()
        return self.port

    def elapsed(self) -> float:
        return time.monotonic() - self._t0

    @property
    def down(self) -> bool:
        return self._runner is not None and self._site is None

    async def set_down(self, down: bool) -> None:
        """Take the provider off the network (connection refused, open connections dropped) or bring it
        back on the same port: an outage, as opposed to a provider that answers with an error."""
        if self._runner is None or down == self.down:
            return
        if down:
            assert self._site is not None and self._server is not None
            await self._site.stop()  # stop listening: new connections are refused
            self._site = None
            await self._server.shutdown(0.1)  # and drop the keep-alive ones clients hold in their pools
            return
        site = web.TCPSite(self._runner, self._host, self.port)
        await site.start()
        self._site = site

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def set_faults(self, faults: Iterable[Fault]) -> None:
        self.book = FaultBook(list(faults), self._rng)

    # ---- dispatch --------------------------------------------------------------------------------

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        if self.spec.keepalive_replies is not None and self._worn_out(request):
            # As llama-server: the kept-alive socket is closed (a FIN, not a reset) before any byte of an
            # answer; the response below is never sent.
            if request.transport is not None:
                request.transport.close()
            return web.Response(status=500)
        path = strip_v1(request.path)
        if self.spec.loading and self.elapsed() < self.spec.loading and not path.startswith("/_sim/"):
            body = {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}
            return web.Response(status=503, body=orjson.dumps(body), content_type=_JSON)
        action, dialect, path = resolve(request.method, path, self.spec.speaks)
        if action == "chat":
            assert dialect is not None
            return await self._chat(request, dialect)
        if action == "gemini_models":
            if self._key_ok(request.headers) is False:
                return unauthorized().response("gemini")
            return web.Response(body=gemini_provider.models_body(self.spec), content_type=_JSON)
        if action == "count_tokens":
            rec = self._record(request, "anthropic")
            rec.key_ok = self._key_ok(request.headers)
            return await catalog.count_tokens(request, rec)
        if action == "models":
            key_ok = self._key_ok(request.headers)
            return catalog.models(self.spec, self.aggregator, key_ok, self._home_dialect, path)
        if action == "control":
            return await self._control(request, path)
        return SimError(404, f"Unknown path {request.path}", "invalid_request_error", "not_found").response(
            self._home_dialect
        )

    def _worn_out(self, request: web.BaseRequest) -> bool:
        """Whether this request arrived on a connection that already carried `keepalive_replies` answers."""
        transport = request.transport
        if transport is None:
            return False
        served = self._served.get(transport, 0)
        self._served[transport] = served + 1
        return served >= (self.spec.keepalive_replies or 0)

    @property
    def _home_dialect(self) -> Dialect:
        """The error shape for paths outside any dialect: Anthropic's only on an Anthropic-only provider."""
        return "anthropic" if self.spec.speaks == ("anthropic",) else "openai"

    def _key_ok(self, headers: CIMultiDictProxy[str]) -> bool | None:
        key = self.spec.api_key
        if key is None:
            return None
        auth = headers.get("Authorization", "")
        return auth == f"Bearer {key}" or key in (headers.get("x-api-key"), headers.get("x-goog-api-key"))

    # ---- chat ------------------------------------------------------------------------------------

    def _record(self, request: web.BaseRequest, dialect: Dialect) -> CallRecord:
        """A record made on arrival (in-flight calls are visible too); credential values never stored."""
        headers = {k.lower(): v for k, v in request.headers.items() if k.lower() not in SECRET_HEADERS}
        secrets = sorted({k.lower() for k in request.headers if k.lower() in SECRET_HEADERS})
        rec = CallRecord(self.spec.id, request.path, time.time(), headers=headers, dialect=dialect)
        rec.secret_headers, rec.query = secrets, request.query_string
        self.recorder.add(rec)
        return rec

    async def _chat(self, request: web.BaseRequest, dialect: Dialect) -> web.StreamResponse:
        rec = self._record(request, dialect)
        try:
            return await self._serve(request, dialect, rec)
        except SimError as err:
            rec.status = err.status
            if rec.outcome == "ok":
                rec.outcome = f"http_{err.status}"
            announced = request.get(QUOTA_HEADERS)
            if announced:  # a failed call still says what is left (SPEC §3.8)
                err.headers = {**announced, **err.headers}
            return err.response(dialect)
        except (ConnectionError, asyncio.CancelledError):
            if rec.outcome == "ok":
                rec.outcome = "disconnected"
            rec.disconnected, rec.disconnected_at = True, time.time()
            raise

    async def _serve(self, request: web.BaseRequest, dialect: Dialect, rec: CallRecord) -> web.StreamResponse:
        rec.key_ok = self._key_ok(request.headers)
        if rec.key_ok is False:
            raise unauthorized()
        raw = await request.read()
        rec.raw_body = raw
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise bad_request("We could not parse the JSON body of your request.") from None
        if dialect == "gemini":  # the model and the method are in the path
            req, counted = gemini_provider.parse_call(request.path, body)
            if counted is not None:
                rec.model, rec.body = req.model, body
                return web.Response(body=counted, content_type=_JSON)
        else:
            req = _PARSERS[dialect](body)
        rec.model, rec.stream, rec.body = req.model, req.stream, body
        if self.spec.strict:
            provenance.check(self.spec.id, req, request.headers)
        model = self.spec.model(req.model)
        if model is None:
            raise not_found_model(req.model)
        if self.limiter is not None:
            key = request.headers.get("x-api-key") or request.headers.get("Authorization") or ""
            request[QUOTA_HEADERS] = self.limiter.take(key, req.prompt_tokens + model.output_tokens)
        if self.aggregator is not None:
            return await self._serve_aggregated(request, dialect, rec, req, model)
        fault = self.book.select(req.model)
        speed = model_speed(model, self.spec.ttft, self.spec.tps, self.fast)
        schedule = model.schedule if model.schedule is not None else self.spec.schedule
        tps = scheduled_tps(schedule, self.elapsed(), None)
        if tps is not None:
            speed = Speed(speed.ttft, tps if tps > 0 else math.inf, speed.reasoning_pace)
        return await self._answer(request, dialect, rec, req, model, fault, speed, None)

    async def _serve_aggregated(
        self, request: web.BaseRequest, dialect: Dialect, rec: CallRecord, req: CallRequest, model: SimModel
    ) -> web.StreamResponse:
        assert self.aggregator is not None
        routing = self.aggregator.plan(req, request.headers)
        fault = self.book.select(req.model)  # the aggregator's own faults: no inner fallback
        if fault is not None and fault.kind in STATUS_KINDS:
            # The aggregator itself refuses (e.g. its own quota): no inner provider is tried.
            rec.fault, rec.outcome = fault, fault.kind
            if fault.delay > 0:
                await asyncio.sleep(fault.delay)
            raise fault_error(fault, req.model)
        if fault is None:
            fault = self._walk_inner(routing, req, rec)
        else:
            routing.attempts.append(Attempt(routing.planned[0], 200, True))
        final = routing.attempts[-1].provider
        rec.inner = final
        rec.inner_attempts = [a.provider for a in routing.attempts]
        self.aggregator.settle(routing)
        return await self._answer(
            request, dialect, rec, req, model, fault, self.aggregator.speed(final), routing
        )

    def _walk_inner(self, routing: Routing, req: CallRequest, rec: CallRecord) -> Fault | None:
        """Try inner providers in plan order; an inner-scoped status fault makes the aggregator fall back,
        as Vercel does. Returns the fault (if any) that travels with the serving provider's reply."""
        last: tuple[Fault, SimError] | None = None
        for name in routing.planned:
            fault = self.book.select(req.model, name)
            if fault is not None and fault.kind in STATUS_KINDS:
                err = fault_error(fault, req.model)
                routing.attempts.append(Attempt(name, err.status, False, err.message))
                last = (fault, err)
                continue
            routing.attempts.append(Attempt(name, 200, True))
            return fault
        assert last is not None
        rec.fault, rec.outcome = last[0], last[0].kind
        rec.inner_attempts = [a.provider for a in routing.attempts]
        rec.inner = routing.attempts[-1].provider
        assert self.aggregator is not None
        self.aggregator.settle(routing)
        raise last[1]

    async def _answer(
        self,
        request: web.BaseRequest,
        dialect: Dialect,
        rec: CallRecord,
        req: CallRequest,
        model: SimModel,
        fault: Fault | None,
        speed: Speed,
        routing: Routing | None,
    ) -> web.StreamResponse:
        tail = model.ttft_tail if model.ttft_tail is not None else self.spec.ttft_tail
        if tail is not None and tail.seconds > 0 and self._rng.random() < tail.share:
            rec.tail_stall = tail.seconds  # a slow outlier: nothing at all for a while, then a normal reply
            await asyncio.sleep(tail.seconds)
        if fault is not None:
            rec.fault, rec.outcome = fault, fault.kind
            early = await self._before_headers(request, fault, req.model)
            if early is not None:
                return early
            if fault.kind == "stall" and fault.after_tokens == 0 and not fault.headers:
                fault = None  # the stall already happened before the headers; the reply is normal
        check_capabilities(model, req)
        resp_id = self._response_id(req) if dialect == "responses" else ""
        plan = make_plan(self.spec.id, model, req, speed)
        if self.prompt_cache is not None and dialect == "anthropic":
            plan.cached_tokens, plan.cache_creation_tokens = self.prompt_cache.account(
                req.body, req.prompt_tokens
            )
        meta = routing.meta() if routing is not None else None
        if dialect == "openai" and not self.spec.reports_usage:
            req = dataclasses.replace(req, include_usage=False)
        if not req.stream:
            payload = reply_body(dialect, plan, req, resp_id, meta)
            if dialect == "openai" and not self.spec.reports_usage:
                payload = orjson.dumps({k: v for k, v in orjson.loads(payload).items() if k != "usage"})
            broken = fault is not None and fault.kind in ("cut", "malformed", "error_event")
            rec.content_tokens = 0 if broken else len(plan.content)
            return await send_body(
                request, payload, fault, dialect, len(plan.content), request.get(QUOTA_HEADERS)
            )
        if dialect == "gemini":
            script = gemini_provider.stream_script(plan)
        elif dialect == "anthropic":
            script = anthropic_provider.stream_script(plan, meta)
        elif dialect == "responses":
            script = responses_provider.stream_script(plan, req, resp_id, meta, self.spec.responses_positions)
        else:
            script = openai_provider.stream_script(plan, req, meta)
        progress = [0]
        try:
            resp, rec.content_tokens = await drive(
                request, script, plan.speed, fault, progress, self.spec.end_delay, request.get(QUOTA_HEADERS)
            )
        except BaseException:
            rec.content_tokens = progress[0]  # a client that hung up got only these
            raise
        return resp

    def _response_id(self, req: CallRequest) -> str:
        """Check `previous_response_id` against the responses this provider stored, then name the new one
        (remembered unless `store: false`, like OpenAI: an unstored response cannot be continued)."""
        previous = req.previous_response_id
        if previous is not None and previous not in self.response_ids:
            raise previous_response_not_found(previous)
        resp_id = responses_provider.new_response_id()
        if req.store:
            self.response_ids[resp_id] = None
            if len(self.response_ids) > MAX_RESPONSE_IDS:
                self.response_ids.popitem(last=False)
        return resp_id

    async def _before_headers(
        self, request: web.BaseRequest, fault: Fault, model_id: str
    ) -> web.Response | None:
        """Faults that act before any response byte: error statuses, reset, stall-before-headers."""
        kind = fault.kind
        if kind in STATUS_KINDS or kind == "reset":
            if fault.delay > 0:
                await asyncio.sleep(fault.delay)
            if kind != "reset":
                raise fault_error(fault, model_id)
            abort(request)
            return web.Response(status=502)  # never reaches the client: the connection is gone
        if kind == "stall" and fault.after_tokens == 0 and not fault.headers:
            await stall(fault.delay)
        return None

    # ---- control ---------------------------------------------------------------------------------

    async def _control(self, request: web.BaseRequest, path: str) -> web.StreamResponse:
        return await control.handle(self, request, path)

    def info(self) -> dict[str, Any]:
        return {
            "id": self.spec.id,
            "kind": self.spec.kind,
            "port": self.port,
            "models": [m.id for m in self.spec.models],
            "inner": [i.name for i in self.spec.inner],
            "dialects": list(self.spec.speaks),
            "fast": self.fast,
            "rate_limited": self.limiter.refused if self.limiter is not None else 0,
        }
