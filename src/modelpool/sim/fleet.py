"""The fleet: one `ProviderServer` per provider, each on its own loopback port, plus a threaded runner.

base_url convention — what each provider's own SDK expects, like the real services document it:
openai and vercel kinds → ``http://HOST:PORT/v1`` (OpenAI SDK style); anthropic → ``http://HOST:PORT``
(the Anthropic SDK appends ``/v1/messages``). `root_url()` is always without ``/v1``. Every server
accepts its paths with and without the ``/v1`` prefix, so either form works anywhere.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable
from typing import Any

import orjson

from modelpool.sim.records import CallRecord
from modelpool.sim.server import ProviderServer
from modelpool.sim.spec import Fault, FleetSpec, SimModel, SimProvider


class Fleet:
    def __init__(self, spec: FleetSpec, *, base_port: int | None = None) -> None:
        """`base_port` set ⇒ provider i listens on base_port + i (stable URLs for demos); else free ports."""
        self.spec = spec
        self.base_port = base_port
        self.host = "127.0.0.1"
        self._servers = {p.id: ProviderServer(p, spec) for p in spec.providers}
        self._started = False

    async def start(self, host: str = "127.0.0.1") -> Fleet:
        self.host = host
        try:
            for i, server in enumerate(self._servers.values()):
                await server.start(host, 0 if self.base_port is None else self.base_port + i)
        except BaseException:
            await self.stop()
            raise
        self._started = True
        return self

    async def stop(self) -> None:
        await asyncio.gather(*(s.stop() for s in self._servers.values()), return_exceptions=True)
        self._started = False

    async def __aenter__(self) -> Fleet:
        return await self.start(self.host)

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # ---- addresses -------------------------------------------------------------------------------

    def _server(self, provider_id: str) -> ProviderServer:
        try:
            return self._servers[provider_id]
        except KeyError:
            raise KeyError(f"no simulated provider {provider_id!r}; have {sorted(self._servers)}") from None

    def port(self, provider_id: str) -> int:
        port = self._server(provider_id).port
        if port is None:
            raise RuntimeError("the fleet is not started")
        return port

    def root_url(self, provider_id: str) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port(provider_id)}"

    def base_url(self, provider_id: str) -> str:
        root = self.root_url(provider_id)
        return root if self._server(provider_id).spec.kind in ("anthropic", "gemini") else f"{root}/v1"

    @property
    def provider_ids(self) -> list[str]:
        return list(self._servers)

    def provider(self, provider_id: str) -> SimProvider:
        return self._server(provider_id).spec

    # ---- observation and scripting ---------------------------------------------------------------

    def calls(self, provider_id: str) -> list[CallRecord]:
        return self._server(provider_id).recorder.list()

    def reset_calls(self, provider_id: str | None = None) -> None:
        targets = self._servers.values() if provider_id is None else [self._server(provider_id)]
        for server in targets:
            server.recorder.clear()

    def set_faults(self, provider_id: str, faults: Iterable[Fault]) -> None:
        """Replace the provider's faults (counters restart). Safe from any thread: one reference swap."""
        self._server(provider_id).set_faults(faults)

    def faults(self, provider_id: str) -> list[Fault]:
        return self._server(provider_id).book.faults

    async def set_down(self, provider_id: str, down: bool = True) -> None:
        """Take a provider off the network (connection refused) or bring it back on its port."""
        await self._server(provider_id).set_down(down)

    # ---- config ----------------------------------------------------------------------------------

    def to_config(
        self, *, model_info: bool = True, providers: Iterable[str] | None = None, **top: Any
    ) -> dict[str, Any]:
        """A modelpool config dict (`providers:` + any extra top-level keys given, e.g. `pool=`, `state=`).

        `model_info=False` leaves capabilities to discovery (the gateway reads the catalogs)."""
        wanted = list(self._servers) if providers is None else list(providers)
        return {"providers": [self._provider_config(pid, model_info) for pid in wanted], **top}

    def _provider_config(self, provider_id: str, model_info: bool) -> dict[str, Any]:
        spec = self.provider(provider_id)
        entry: dict[str, Any] = {
            "id": spec.id,
            "kind": spec.kind,
            "name": spec.name or spec.id,
            "base_url": self.base_url(provider_id),
            "dialects": list(spec.speaks),  # what it serves natively (SPEC §1.6), written out in full
            "models": [m.id for m in spec.models],
        }
        if spec.api_key is not None:
            entry["api_key"] = spec.api_key
        if spec.prices is not None:
            entry["prices"] = spec.prices
        if model_info:
            info = {m.id: _model_info(m) for m in spec.models}
            shared = list({orjson.dumps(v, option=orjson.OPT_SORT_KEYS) for v in info.values()})
            if len(info) > 1 and len(shared) == 1:
                # One glob instead of the same entry per model: the scale preset's 10,000 routes would
                # otherwise write 10,000 identical mappings for the gateway to parse (issue #21).
                info = {"*": orjson.loads(shared[0])}
            entry["model_info"] = {k: v for k, v in info.items() if v}
        return entry


def _model_info(model: SimModel) -> dict[str, Any]:
    info: dict[str, Any] = {"input": ["text", "image"] if model.images else ["text"], "tools": model.tools}
    if model.context_window is not None:
        info["context_window"] = model.context_window
    if model.efforts is not None:
        info["efforts"] = list(model.efforts)
    return info


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop when installed (the fleet must keep up with the gateway under benchmark load)."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency of uvicorn[standard]
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def _cancel_leftovers(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel tasks still alive after shutdown (e.g. handlers in a stall) so closing the loop is quiet."""
    tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in tasks:
        task.cancel()
    if tasks:
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))


class FleetThread:
    """Runs a `Fleet` on its own event loop in a daemon thread, so the fleet and the code under test
    (a gateway, or a synchronous SDK client) never share a loop. Usable as a context manager."""

    def __init__(self, spec: FleetSpec, *, host: str = "127.0.0.1", base_port: int | None = None) -> None:
        self.fleet = Fleet(spec, base_port=base_port)
        self._host = host
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    def start(self, timeout: float = 10.0) -> Fleet:
        if self._thread is not None:
            return self.fleet
        self._thread = threading.Thread(target=self._run, name="modelpool-sim-fleet", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError("the simulated fleet did not start in time")
        if self._error is not None:
            raise RuntimeError("the simulated fleet failed to start") from self._error
        return self.fleet

    def _run(self) -> None:
        loop = new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self.fleet.start(self._host))
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            loop.close()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(self.fleet.stop())
            _cancel_leftovers(loop)
            loop.close()

    def stop(self, timeout: float = 10.0) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if not loop.is_closed():
            loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
        self._thread = None
        self._loop = None

    def __enter__(self) -> FleetThread:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # Conveniences that delegate to the fleet (all thread-safe reads or reference swaps).
    def base_url(self, provider_id: str) -> str:
        return self.fleet.base_url(provider_id)

    def root_url(self, provider_id: str) -> str:
        return self.fleet.root_url(provider_id)

    def calls(self, provider_id: str) -> list[CallRecord]:
        return self.fleet.calls(provider_id)

    def reset_calls(self, provider_id: str | None = None) -> None:
        self.fleet.reset_calls(provider_id)

    def set_faults(self, provider_id: str, faults: Iterable[Fault]) -> None:
        self.fleet.set_faults(provider_id, faults)

    def to_config(self, **kwargs: Any) -> dict[str, Any]:
        return self.fleet.to_config(**kwargs)

    def set_down(self, provider_id: str, down: bool = True, timeout: float = 10.0) -> None:
        """`Fleet.set_down` from another thread; returns once the provider is off (or back on) the network."""
        loop = self._loop
        if loop is None:
            raise RuntimeError("the fleet is not running")
        asyncio.run_coroutine_threadsafe(self.fleet.set_down(provider_id, down), loop).result(timeout)
