"""`previous_response_id` (SPEC §1.6): a Responses call that continues a stored response goes to the route
that stored it, natively — no other route knows it, so there is no failover."""

from __future__ import annotations

from modelpool.protocols.errors import ClientError
from modelpool.routing.call import Call
from modelpool.routing.response_book import ResponseBook
from modelpool.runtime import Runtime


def continue_response(rt: Runtime, book: ResponseBook, call: Call) -> None:
    """Force `call` onto the route that produced its `previous_response_id`; a 400 for an id this gateway
    never relayed natively (or forgot), or whose route no longer speaks Responses."""
    prev = call.body["previous_response_id"]
    produced = book.get(prev)
    route = rt.catalog.routes.get(produced.route) if produced is not None else None
    if produced is None or route is None:
        raise ClientError(
            400,
            f"previous_response_id {prev!r} was not produced through this gateway by a route that "
            "stores responses (or it was forgotten after a restart); send the whole input instead",
            param="previous_response_id",
        )
    if not rt.endpoints[route.provider_id].speaks("responses"):
        raise ClientError(
            400,
            f"previous_response_id {prev!r}: route {route.key} no longer speaks Responses",
            param="previous_response_id",
        )
    call.forced_route = route.key
    if produced.upstream_id != prev:  # a failover mid-stream showed the client another attempt's id
        call.body = {**call.body, "previous_response_id": produced.upstream_id}
        call.raw = b""  # the body changed: it is encoded again
