"""Which route produced each Responses id modelpool relayed (SPEC §1.6: `previous_response_id`).

A Responses call that continues an earlier response (`previous_response_id`) can only be served by the
upstream that stored that response; modelpool remembers, per response id it relayed natively, the route
and the id the upstream gave it (a walk that failed over mid-reasoning shows the client the first
attempt's id). Bounded, in memory, per process: a restart or another replica forgets it, and the call
then gets a clear 400 asking for the whole input (what stateless clients such as Codex send anyway).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Produced:
    route: str  # route key
    upstream_id: str  # the id under which that upstream stored the response


class ResponseBook:
    def __init__(self, capacity: int = 50_000) -> None:
        self.capacity = capacity
        self._ids: OrderedDict[str, Produced] = OrderedDict()

    def remember(self, client_id: str, route: str, upstream_id: str | None = None) -> None:
        self._ids[client_id] = Produced(route, upstream_id or client_id)
        self._ids.move_to_end(client_id)
        while len(self._ids) > self.capacity:
            self._ids.popitem(last=False)

    def get(self, client_id: str) -> Produced | None:
        return self._ids.get(client_id)

    def __len__(self) -> int:
        return len(self._ids)
