"""The sim's control surface: `POST|GET /_sim/faults`, `GET|DELETE /_sim/calls`, `GET /_sim/info`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

import orjson
from aiohttp import web

from modelpool.sim.faults import FaultBook
from modelpool.sim.records import Recorder
from modelpool.sim.spec import Fault, SimProvider


class Controlled(Protocol):
    """What the control surface reads and sets on a provider server (`server.ProviderServer`)."""

    spec: SimProvider
    book: FaultBook
    recorder: Recorder

    def set_faults(self, faults: Iterable[Fault]) -> None: ...

    def info(self) -> dict[str, Any]: ...


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(status=status, body=orjson.dumps(data), content_type="application/json")


async def handle(server: Controlled, request: web.BaseRequest, path: str) -> web.StreamResponse:
    method = request.method
    if path == "/_sim/faults" and method == "POST":
        try:
            data = orjson.loads(await request.read())
            items = data.get("faults", []) if isinstance(data, dict) else data
            faults = [Fault.from_dict(f) for f in items]
        except (orjson.JSONDecodeError, TypeError, ValueError, AttributeError) as exc:
            return _json(
                {"error": {"message": f"bad fault list: {exc}", "type": "invalid_request_error"}}, 400
            )
        server.set_faults(faults)
        return _json({"ok": True, "faults": [f.to_dict() for f in faults]})
    if path == "/_sim/faults" and method == "GET":
        return _json({"faults": [f.to_dict() for f in server.book.faults]})
    if path == "/_sim/calls" and method == "GET":
        since = int(request.query.get("since", "0") or 0)
        return _json({"calls": [c.to_dict() for c in server.recorder.list()[since:]]})
    if path == "/_sim/calls" and method == "DELETE":
        server.recorder.clear()
        return _json({"ok": True})
    if path == "/_sim/info" and method == "GET":
        return _json(server.info())
    if path == "/_sim/speed" and method == "POST":
        # Speeds that change on a schedule (bench/drift.py): the provider's ttft / tok/s from now on.
        try:
            data = orjson.loads(await request.read())
            ttft, tps = float(data.get("ttft", server.spec.ttft)), float(data.get("tps", server.spec.tps))
        except (orjson.JSONDecodeError, TypeError, ValueError, AttributeError) as exc:
            error = {"message": f"bad speed: {exc}", "type": "invalid_request_error"}
            return _json({"error": error}, 400)
        server.spec.ttft, server.spec.tps = ttft, tps
        return _json({"ok": True, "ttft": ttft, "tps": tps})
    return _json({"error": {"message": f"unknown control path {path}", "type": "not_found"}}, 404)
