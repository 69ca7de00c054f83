"""Reading an incoming chat request (OpenAI or Anthropic dialect) into the few facts the sim acts on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from modelpool.sim.errors import bad_request

_OFF = frozenset({"off", "none", "disabled"})


@dataclass(slots=True)
class CallRequest:
    body: dict[str, Any]
    model: str
    stream: bool
    include_usage: bool
    max_tokens: int | None
    effort: str | None  # requested effort ("off" when thinking was turned off)
    thinking: bool | None  # explicit on/off; None when the request does not say
    tool_names: list[str]
    tool_turn: bool  # tools offered and the last message is a fresh user turn → answer with a tool call
    has_images: bool
    prompt_tokens: int
    gateway: dict[str, Any] = field(default_factory=dict)  # providerOptions.gateway (aggregator)


def parse_openai(body: Any) -> CallRequest:
    messages = _common(body)
    tools = body.get("tools") or []
    names = [_openai_tool_name(t) for t in tools if isinstance(t, dict)]
    thinking = _thinking_flag(body.get("thinking"))
    effort = body.get("reasoning_effort")
    effort = _norm_effort(effort) if isinstance(effort, str) else ("off" if thinking is False else None)
    stream_options = body.get("stream_options") or {}
    last = messages[-1] if messages else {}
    return CallRequest(
        body=body,
        model=body["model"],
        stream=bool(body.get("stream")),
        include_usage=bool(isinstance(stream_options, dict) and stream_options.get("include_usage")),
        max_tokens=_int_or_none(body.get("max_completion_tokens") or body.get("max_tokens")),
        effort=effort,
        thinking=thinking,
        tool_names=[n for n in names if n],
        tool_turn=any(names) and isinstance(last, dict) and last.get("role") == "user",
        has_images=any(_has_part(m, ("image_url", "image", "input_image")) for m in messages),
        prompt_tokens=_estimate_tokens(messages, None),
        gateway=_gateway_options(body),
    )


def parse_anthropic(body: Any) -> CallRequest:
    messages = _common(body)
    if "max_tokens" not in body:
        raise bad_request("max_tokens: Field required")
    tools = body.get("tools") or []
    names = [t.get("name") for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)]
    thinking = _thinking_flag(body.get("thinking"))
    config = body.get("output_config") or {}
    effort = config.get("effort") if isinstance(config, dict) else None
    effort = _norm_effort(effort) if isinstance(effort, str) else ("off" if thinking is False else None)
    last = messages[-1] if messages else {}
    fresh_user = (
        isinstance(last, dict) and last.get("role") == "user" and not _has_part(last, ("tool_result",))
    )
    return CallRequest(
        body=body,
        model=body["model"],
        stream=bool(body.get("stream")),
        include_usage=True,
        max_tokens=_int_or_none(body.get("max_tokens")),
        effort=effort,
        thinking=thinking,
        tool_names=[n for n in names if n],
        tool_turn=any(names) and fresh_user,
        has_images=any(_has_part(m, ("image",)) for m in messages),
        prompt_tokens=_estimate_tokens(messages, body.get("system")),
        gateway=_gateway_options(body),
    )


def _common(body: Any) -> list[Any]:
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise bad_request("you must provide a model parameter", "missing_model")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise bad_request("messages: a non-empty list is required", "invalid_messages")
    return messages


def _openai_tool_name(tool: dict[str, Any]) -> str | None:
    fn = tool.get("function")
    name = fn.get("name") if isinstance(fn, dict) else tool.get("name")
    return name if isinstance(name, str) else None


def _thinking_flag(thinking: Any) -> bool | None:
    if not isinstance(thinking, dict):
        return None
    kind = thinking.get("type")
    if kind in ("enabled", "adaptive"):
        return True
    if kind == "disabled":
        return False
    return None


def _norm_effort(effort: str) -> str:
    effort = effort.strip().lower()
    return "off" if effort in _OFF else effort


def _int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _has_part(message: Any, kinds: tuple[str, ...]) -> bool:
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return False
    return any(isinstance(p, dict) and p.get("type") in kinds for p in content)


def _estimate_tokens(messages: list[Any], system: Any) -> int:
    """Rough prompt size: characters / 4 over every text found (good enough for usage and context checks)."""
    chars = _text_len(system)
    for m in messages:
        if isinstance(m, dict):
            chars += _text_len(m.get("content"))
    return max(1, chars // 4)


def _text_len(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        total = 0
        for part in content:
            if isinstance(part, dict):
                for key in ("text", "thinking", "content"):
                    total += _text_len(part.get(key))
        return total
    return 0


def _gateway_options(body: dict[str, Any]) -> dict[str, Any]:
    opts = body.get("providerOptions")
    gw = opts.get("gateway") if isinstance(opts, dict) else None
    return gw if isinstance(gw, dict) else {}
