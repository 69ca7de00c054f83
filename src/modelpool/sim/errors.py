"""HTTP error replies in each provider dialect, and the errors scripted faults turn into."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import orjson
from aiohttp import web

from modelpool.sim.gemini_shapes import error_obj
from modelpool.sim.spec import Fault

Dialect = Literal["openai", "anthropic", "responses", "gemini"]  # Responses errors have the OpenAI shape

QUOTA_MESSAGE = (
    "Insufficient balance: your account balance is exhausted (余额不足), please top up (请充值) to continue."
)

# Anthropic error `type` per HTTP status (anthropic SDK maps status → exception class, the type is prose).
_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


@dataclass
class SimError(Exception):
    """An error reply. `etype`/`code` are OpenAI's fields; Anthropic's type derives from the status."""

    status: int
    message: str
    etype: str = "invalid_request_error"
    code: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    anthropic_type: str | None = None
    param: str | None = None

    def __str__(self) -> str:
        return f"{self.status} {self.message}"

    def openai_body(self) -> dict[str, object]:
        return {
            "error": {"message": self.message, "type": self.etype, "param": self.param, "code": self.code}
        }

    def anthropic_body(self) -> dict[str, object]:
        return {"type": "error", "error": {"type": self.anthropic_error_type(), "message": self.message}}

    def anthropic_error_type(self) -> str:
        if self.anthropic_type:
            return self.anthropic_type
        return _ANTHROPIC_TYPES.get(
            self.status, "api_error" if self.status >= 500 else "invalid_request_error"
        )

    def response(self, dialect: Dialect) -> web.Response:
        if dialect == "gemini":
            body = error_obj(self.status, self.message)
        else:
            body = self.anthropic_body() if dialect == "anthropic" else self.openai_body()
        return web.Response(
            status=self.status, body=orjson.dumps(body), content_type="application/json", headers=self.headers
        )


def fault_error(fault: Fault, model_id: str) -> SimError:
    """The error reply of a status-kind fault (quota, rate_limit, auth, server_error, status, unsupported)."""
    kind = fault.kind
    if kind == "quota":
        msg = fault.message or QUOTA_MESSAGE
        return SimError(
            fault.status or 429,
            msg,
            "insufficient_quota",
            "insufficient_quota",
            anthropic_type="billing_error",
        )
    if kind == "rate_limit":
        wait = 1.0 if fault.retry_after is None else fault.retry_after
        msg = (
            fault.message or f"Rate limit reached for requests on {model_id}. Please try again in {wait:g}s."
        )
        # Retry-After is whole seconds by RFC; retry-after-ms has the exact value (the OpenAI SDK reads both).
        headers = {"Retry-After": str(max(0, round(wait))), "retry-after-ms": str(int(wait * 1000))}
        return SimError(fault.status or 429, msg, "requests", "rate_limit_exceeded", headers)
    if kind == "auth":
        msg = fault.message or "Incorrect API key provided. You can find your API key in your dashboard."
        return SimError(fault.status or 401, msg, "invalid_request_error", "invalid_api_key")
    if kind == "unsupported":
        msg = (
            fault.message or f"The model `{model_id}` does not support this request (unsupported parameter)."
        )
        return SimError(fault.status or 400, msg, "invalid_request_error", "unsupported_parameter")
    status = fault.status or 500
    if kind == "server_error":
        msg = fault.message or "The server had an error while processing your request. Sorry about that!"
        return SimError(status, msg, "server_error", None)
    return SimError(status, fault.message or f"Simulated upstream error {status}", _openai_type(status), None)


def _openai_type(status: int) -> str:
    if status >= 500:
        return "server_error"
    if status == 429:
        return "rate_limit_exceeded"
    return "invalid_request_error"


def stream_error(fault: Fault) -> SimError:
    """The error carried by a mid-stream `error_event` (status picks the type; default overloaded)."""
    status = fault.status or 529
    msg = fault.message or ("Overloaded" if status == 529 else f"Simulated mid-stream error {status}")
    return SimError(status, msg, _openai_type(status), None)


def bad_request(message: str, code: str | None = None) -> SimError:
    return SimError(400, message, "invalid_request_error", code)


def not_found_model(model_id: str) -> SimError:
    msg = f"The model `{model_id}` does not exist or you do not have access to it."
    return SimError(404, msg, "invalid_request_error", "model_not_found")


def unauthorized() -> SimError:
    return SimError(401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key")


def previous_response_not_found(response_id: str) -> SimError:
    """What OpenAI answers for a `previous_response_id` it does not hold (unknown, or stored elsewhere)."""
    msg = f"Previous response with id '{response_id}' not found."
    return SimError(
        400, msg, "invalid_request_error", "previous_response_not_found", param="previous_response_id"
    )
