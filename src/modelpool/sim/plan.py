"""What a call answers, dialect-free (tokens, tool call, finish reason, timing), and capability checks."""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass

from modelpool.sim.errors import SimError, bad_request
from modelpool.sim.request import CallRequest
from modelpool.sim.spec import SimModel
from modelpool.sim.text import content_tokens, reasoning_tokens, tool_argument_fragments

# Reasoning length when the request asks for thinking but the model declares none of its own.
DEFAULT_REASONING_TOKENS = 8


@dataclass(slots=True)
class Speed:
    ttft: float  # seconds before the first reasoning/content chunk
    tps: float  # tokens per second; math.inf = no pacing at all


FAST = Speed(0.0, math.inf)


@dataclass(slots=True)
class Plan:
    provider_id: str
    model_id: str
    reasoning: tuple[str, ...]
    content: tuple[str, ...]  # answer tokens (empty for a tool-call reply)
    tool_name: str | None
    tool_id: str | None
    tool_fragments: tuple[str, ...]
    finish: str  # OpenAI vocabulary: stop | length | tool_calls
    prompt_tokens: int
    speed: Speed
    cached: int = 0  # of prompt_tokens: cache reads
    cache_write: int = 0  # of prompt_tokens: cache writes

    @property
    def completion_tokens(self) -> int:
        return len(self.reasoning) + len(self.content) + len(self.tool_fragments)


def check_capabilities(model: SimModel, req: CallRequest) -> None:
    """Refuse what the model cannot do, the way real providers do: a 400 that says "does not support"."""
    if req.tool_names and not model.tools:
        raise _unsupported(f"The model `{model.id}` does not support tools (function calling).")
    if req.has_images and not model.images:
        raise _unsupported(f"The model `{model.id}` does not support image input.")
    effort = req.effort
    if effort and effort != "off" and model.efforts is not None and effort not in model.efforts:
        raise _unsupported(f"The model `{model.id}` does not support reasoning_effort '{effort}'.")
    if model.context_window is not None and req.prompt_tokens > model.context_window:
        msg = (
            f"This model's maximum context length is {model.context_window} tokens. "
            f"However, your messages resulted in {req.prompt_tokens} tokens."
        )
        raise bad_request(msg, "context_length_exceeded")


def _unsupported(message: str) -> SimError:
    return SimError(400, message, "invalid_request_error", "unsupported_parameter")


def reasoning_count(model: SimModel, req: CallRequest) -> int:
    if req.thinking is False or req.effort == "off":
        return 0
    if model.reasoning_tokens > 0:
        return model.reasoning_tokens
    return DEFAULT_REASONING_TOKENS if (req.thinking or req.effort) else 0


def make_plan(provider_id: str, model: SimModel, req: CallRequest, speed: Speed) -> Plan:
    """`provider_id` is the tag written into the text (the sim provider that answers)."""
    plan = _make_plan(provider_id, model, req, speed)
    plan.cached = min(model.cache_read_tokens, plan.prompt_tokens)
    plan.cache_write = min(model.cache_write_tokens, plan.prompt_tokens - plan.cached)
    return plan


def _make_plan(provider_id: str, model: SimModel, req: CallRequest, speed: Speed) -> Plan:
    reasoning = reasoning_tokens(provider_id, req.model, reasoning_count(model, req))
    if req.tool_turn:
        return Plan(
            provider_id, req.model, reasoning, (), req.tool_names[0], f"call_{uuid.uuid4().hex[:24]}",
            tool_argument_fragments(provider_id, req.model), "tool_calls", req.prompt_tokens, speed,
        )  # fmt: skip
    n = model.output_tokens
    finish = "stop"
    if req.max_tokens is not None and req.max_tokens < n:
        n, finish = max(1, req.max_tokens), "length"
    content = content_tokens(provider_id, req.model, n)
    return Plan(provider_id, req.model, reasoning, content, None, None, (), finish, req.prompt_tokens, speed)


def model_speed(model: SimModel, provider_ttft: float, provider_tps: float, fast: bool) -> Speed:
    """Fast mode drops the provider-level pacing only: a model that sets its own `ttft`/`tps` keeps them,
    so a benchmark fleet can mix zero-think-time models with paced or slow ones (bench/memory.py)."""
    if fast and model.ttft is None and model.tps is None:
        return FAST
    if fast:
        return Speed(max(0.0, model.ttft or 0.0), model.tps if model.tps and model.tps > 0 else math.inf)
    ttft = provider_ttft if model.ttft is None else model.ttft
    tps = provider_tps if model.tps is None else model.tps
    return Speed(max(0.0, ttft), tps if tps and tps > 0 else math.inf)
