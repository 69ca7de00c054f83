"""What a call answers, dialect-free (tokens, tool call, finish reason, timing), and capability checks."""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass

from modelpool.sim import agent
from modelpool.sim.errors import SimError, bad_request
from modelpool.sim.request import CallRequest
from modelpool.sim.spec import AgentTask, SimModel
from modelpool.sim.text import (
    content_tokens,
    reasoning_tokens,
    split_fragments,
    tool_argument_fragments,
    words,
)

# Reasoning length when the request asks for thinking but the model declares none of its own.
DEFAULT_REASONING_TOKENS = 8


@dataclass(slots=True)
class Speed:
    ttft: float  # seconds before the first reasoning/content chunk
    tps: float  # tokens per second; math.inf = no pacing at all
    reasoning_pace: float | None = None  # seconds between reasoning events (None: at `tps`)


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
    tool_kind: str = "function"  # function | custom (raw input) | local_shell (argv in tool_command)
    tool_command: tuple[str, ...] = ()
    cached_tokens: int = 0  # prompt tokens read from the provider's cache
    cache_creation_tokens: int = 0  # prompt tokens written to it
    web_search: str | None = None  # the name of the offered web search tool the reply uses first
    more_calls: tuple[str, ...] = ()  # ids of further calls of the same function, made with the first

    @property
    def call_ids(self) -> tuple[str, ...]:
        """The ids of the reply's tool calls, in order (empty for a text reply)."""
        return (self.tool_id, *self.more_calls) if self.tool_id is not None else ()

    @property
    def completion_tokens(self) -> int:
        shell = 1 if self.tool_command else 0  # a local_shell action streams no fragments but costs tokens
        calls = max(1, len(self.call_ids))
        return len(self.reasoning) + len(self.content) + len(self.tool_fragments) * calls + shell


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
    reasoning = reasoning_tokens(provider_id, req.model, reasoning_count(model, req))
    # The demo's agent takes its file from the prompt; a prompt naming none gets the model's usual text.
    task = model.agent.for_prompt(req.user_texts()) if model.agent is not None else None
    plan = _agent_plan(provider_id, task, req, speed, reasoning) if task is not None else None
    if plan is None:  # an agent with no tool that can write answers in text, it does not call others
        plan = _plain_plan(provider_id, model, req, speed, reasoning, tools=model.agent is None)
    plan.cached_tokens = min(model.cached_tokens, req.prompt_tokens)
    plan.cache_creation_tokens = model.cache_creation_tokens
    if model.web_search and plan.tool_name is None:
        plan.web_search = next((t.name for t in req.tools if t.kind == "server" and "search" in t.name), None)
    return plan


def _plain_plan(
    provider_id: str,
    model: SimModel,
    req: CallRequest,
    speed: Speed,
    reasoning: tuple[str, ...],
    *,
    tools: bool = True,
) -> Plan:
    client_tools = [t for t in req.tools if t.kind != "server"]
    if tools and req.tool_turn and client_tools:
        tool = client_tools[0]
        command = ("echo", f"{provider_id}:{req.model}") if tool.kind == "local_shell" else ()
        more = model.parallel_calls - 1 if tool.kind == "function" else 0
        return Plan(
            provider_id, req.model, reasoning, (), tool.name, _call_id(),
            () if command else tool_argument_fragments(provider_id, req.model), "tool_calls",
            req.prompt_tokens, speed, tool.kind, command,
            more_calls=tuple(_call_id() for _ in range(max(0, more))),
        )  # fmt: skip
    n = model.output_tokens
    finish = "stop"
    if req.max_tokens is not None and req.max_tokens < n:
        n, finish = max(1, req.max_tokens), "length"
    content = content_tokens(provider_id, req.model, n)
    return Plan(provider_id, req.model, reasoning, content, None, None, (), finish, req.prompt_tokens, speed)


def _agent_plan(
    provider_id: str, task: AgentTask, req: CallRequest, speed: Speed, reasoning: tuple[str, ...]
) -> Plan | None:
    """The scripted agent: a file-writing call, or the closing text once a tool result came back."""
    if req.after_tool_result:
        content = words(task.done_text)
        return Plan(
            provider_id, req.model, reasoning, content, None, None, (), "stop", req.prompt_tokens, speed
        )
    call = agent.choose(task, req)
    if call is None:
        return None
    return Plan(
        provider_id, req.model, reasoning, (), call.name, _call_id(), split_fragments(call.payload),
        "tool_calls", req.prompt_tokens, speed, call.kind, call.command,
    )  # fmt: skip


def _call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def model_speed(model: SimModel, provider_ttft: float, provider_tps: float, fast: bool) -> Speed:
    """Fast mode drops the provider-level pacing only: a model that sets its own `ttft`/`tps` keeps them,
    so a benchmark fleet can mix zero-think-time models with paced or slow ones (bench/memory.py)."""
    pace = model.reasoning_pace
    if fast and model.ttft is None and model.tps is None and not pace:
        return FAST
    if fast:
        tps = model.tps if model.tps and model.tps > 0 else math.inf
        return Speed(max(0.0, model.ttft or 0.0), tps, pace)
    ttft = provider_ttft if model.ttft is None else model.ttft
    tps = provider_tps if model.tps is None else model.tps
    return Speed(max(0.0, ttft), tps if tps and tps > 0 else math.inf, pace)
