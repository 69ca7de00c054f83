"""Which route signed what: signature digest → route key, bounded, persisted and shared like pins (§9).

Written when a walk's reply is complete (never by a failed call's half answer that the client did not keep),
read when a conversation's next request is planned. The hot path reads only this process's memory; other
replicas' entries arrive through the state backend's change feed (`engine.replica`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from modelpool.signers.scan import request_digests

MAX_SIGNATURES = 200_000  # digests remembered (least recently used forgotten first): ~60 bytes each

Persist = Callable[[str, Any], None]


class SignerBook:
    def __init__(self, persist: Persist | None = None, limit: int = MAX_SIGNATURES) -> None:
        self._routes: OrderedDict[str, str] = OrderedDict()
        self._persist = persist
        self._limit = limit

    def __len__(self) -> int:
        return len(self._routes)

    def add(self, signed: Iterable[tuple[str, str]]) -> None:
        """(route, digest) pairs a reply carried."""
        for route, dig in signed:
            if self._routes.get(dig) != route:
                self._routes[dig] = route
                if self._persist is not None:
                    self._persist(dig, route)
            self._routes.move_to_end(dig)
        while len(self._routes) > self._limit:
            self._routes.popitem(last=False)

    def signers(self, digests: Iterable[str]) -> dict[str, str]:
        """digest → route for the digests it knows (unknown signers are left alone: not ours to judge)."""
        routes = self._routes
        return {d: routes[d] for d in digests if d in routes}

    def of_request(self, raw: bytes) -> tuple[dict[str, str], str | None]:
        """The known signers of a request's signatures (digest → route) and the latest one's route. Two
        substring tests when the history holds no signature."""
        digests = request_digests(raw)
        if not digests:
            return {}, None
        known = self.signers(digests)
        return known, next((known[d] for d in reversed(digests) if d in known), None)

    def load(self, stored: Mapping[str, Any]) -> None:
        for dig, route in stored.items():
            if isinstance(route, str):
                self._routes[dig] = route

    def apply(self, dig: str, route: Any) -> None:
        """Another replica's entry (its change feed)."""
        if isinstance(route, str):
            self._routes[dig] = route
        else:
            self._routes.pop(dig, None)
