"""Which answer a simulated provider's request asks for (by method, path and the dialects the provider
speaks), and the body a non-stream reply is rendered as in each dialect."""

from __future__ import annotations

from typing import Any, Literal

from modelpool.sim import anthropic_provider, gemini_provider, openai_provider, responses_provider
from modelpool.sim.errors import Dialect
from modelpool.sim.plan import Plan
from modelpool.sim.request import CallRequest

Action = Literal["chat", "count_tokens", "gemini_models", "models", "control", "unknown"]
_CHAT_PATHS: dict[str, Dialect] = {
    "/chat/completions": "openai",
    "/messages": "anthropic",
    "/responses": "responses",
}


def strip_v1(path: str) -> str:
    """Paths are accepted with or without `/v1`, so any base_url convention reaches them."""
    path = path.rstrip("/") or "/"
    if path == "/v1" or path.startswith("/v1/"):
        return path[3:] or "/"
    return path


def resolve(method: str, path: str, speaks: tuple[str, ...]) -> tuple[Action, Dialect | None, str]:
    """(what to answer, the call's dialect for `chat`, the path as the answer reads it)."""
    if path.startswith("/v1beta"):  # the Gemini API, and its OpenAI-compatible root
        path = path[len("/v1beta") :] or "/"
        if path.startswith("/openai/"):
            path = path[len("/openai") :]
        elif method == "GET" and path.startswith("/models") and "gemini" in speaks:
            return "gemini_models", None, path
    if method == "POST" and "gemini" in speaks and gemini_provider.target(path) is not None:
        return "chat", "gemini", path  # also a Gemini path under another root (`/v1`)
    if method == "POST":
        dialect = _CHAT_PATHS.get(path)
        if dialect is not None and dialect in speaks:
            return "chat", dialect, path
        if path == "/messages/count_tokens" and "anthropic" in speaks:
            return "count_tokens", "anthropic", path
    elif method == "GET" and path.startswith("/models"):
        return "models", None, path
    if path.startswith("/_sim/"):
        return "control", None, path
    return "unknown", None, path


def reply_body(
    dialect: Dialect, plan: Plan, req: CallRequest, resp_id: str, meta: dict[str, Any] | None
) -> bytes:
    if dialect == "gemini":
        return gemini_provider.body(plan)
    if dialect == "anthropic":
        return anthropic_provider.message_body(plan, meta)
    if dialect == "responses":
        return responses_provider.body(plan, req, resp_id, meta)
    return openai_provider.completion_body(plan, meta)
