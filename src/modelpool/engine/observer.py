"""The seam where a face counts the engine's calls: the HTTP server plugs in `observe.Observer`, the
engine used as a library runs with `NoObserver`. The engine never imports a face (SPEC §1.4)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class CallObserver(Protocol):
    """What a face that counts calls plugs into the engine (`observe.Observer` for the HTTP server)."""

    in_flight: dict[str, int]

    def begin(self, ingress: str, headers: Mapping[str, str]) -> Any: ...
    def done(self, trace: Any) -> None: ...
    def render(self) -> bytes: ...
    def close(self) -> None: ...
    def start_tracing(self, config: Any) -> None: ...
    def stop_tracing(self) -> None: ...


class NoObserver:
    """Counts nothing: the engine used as a library without the HTTP face."""

    def __init__(self) -> None:
        self.in_flight: dict[str, int] = {}

    def begin(self, ingress: str, headers: Mapping[str, str]) -> Any:
        return None

    def done(self, trace: Any) -> None:
        return None

    def render(self) -> bytes:
        return b""

    def close(self) -> None:
        return None

    def start_tracing(self, config: Any) -> None:
        return None

    def stop_tracing(self) -> None:
        return None
