"""Errors the gateway answers with, independent of the ingress dialect that renders them."""

from __future__ import annotations

from dataclasses import dataclass, field


class ClientError(Exception):
    """The client's request is at fault: rendered as a 4xx in the ingress protocol's error shape."""

    def __init__(
        self, status: int, message: str, *, type: str = "invalid_request_error", param: str | None = None
    ):
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.param = param


@dataclass(slots=True)
class AttemptRecord:
    """One upstream attempt of a walk, as reported to clients, logs and the dashboard."""

    route: str
    kind: str | None = None  # failure kind, None when it succeeded
    status: int | None = None
    message: str = ""
    retry: bool = False  # True when it was a retry on the same route


@dataclass(slots=True)
class WalkFailed(Exception):
    """Every candidate failed: the error names the pool, each route tried and its failure kind."""

    pool: str
    attempts: list[AttemptRecord] = field(default_factory=list)
    status: int = 502
    upstream_body: bytes | None = None  # relayed when the request itself was at fault (kind `request`)
    message_override: str | None = None

    def __post_init__(self) -> None:
        Exception.__init__(self, self.message)

    @property
    def message(self) -> str:
        if self.message_override:
            return self.message_override
        if not self.attempts:
            return f"pool {self.pool!r}: no route available"
        if {a.kind for a in self.attempts} == {"request"}:
            # The request itself is at fault: say why in full (e.g. the field no route can carry), once.
            reasons = dict.fromkeys(a.message[:1000] for a in self.attempts if a.message)
            return f"pool {self.pool!r}: " + "; ".join(reasons or ["the request was refused"])
        tried = "; ".join(
            f"{a.route}: {a.kind or 'error'}" + (f" ({a.message[:200]})" if a.message else "")
            for a in self.attempts
        )
        return f"pool {self.pool!r}: every route failed — {tried}"

    @property
    def type(self) -> str:
        kinds = {a.kind for a in self.attempts}
        if kinds and kinds <= {"rate-limit", "quota"}:
            return "rate_limit_error"
        if kinds == {"request"}:
            return "invalid_request_error"
        return "upstream_error"
