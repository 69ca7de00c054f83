"""Reading an incoming call (Chat Completions, Messages or Responses) into the few facts the sim acts on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from modelpool.sim.errors import bad_request
from modelpool.sim.gemini_shapes import texts as gemini_texts

_OFF = frozenset({"off", "none", "disabled"})

ToolKind = Literal["function", "custom", "local_shell", "server"]

# Tool types that run on the provider's side (the model never hands them to the client).
_SERVER_TOOL_PREFIXES = (
    "web_search",
    "web_fetch",
    "code_execution",
    "file_search",
    "image_generation",
    "mcp",
)
# Responses input items that carry a tool's result back to the model.
_RESULT_ITEMS = frozenset({"function_call_output", "custom_tool_call_output", "local_shell_call_output"})


@dataclass(slots=True, frozen=True)
class ToolSpec:
    """One offered tool, dialect-free: what the scripted agent needs to pick and fill it."""

    name: str
    kind: ToolKind
    schema: dict[str, Any] = field(default_factory=dict)  # JSON schema of a function tool's arguments

    @property
    def properties(self) -> dict[str, Any]:
        props = self.schema.get("properties")
        return props if isinstance(props, dict) else {}


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
    dialect: str = "openai"
    tools: list[ToolSpec] = field(default_factory=list)
    after_tool_result: bool = False  # the conversation's last turn is a tool result
    include: tuple[str, ...] = ()  # Responses `include`
    reasoning_summary: bool = False  # Responses `reasoning.summary` asked for
    previous_response_id: str | None = None
    store: bool = True

    @property
    def server_tools(self) -> list[str]:
        return [t.name for t in self.tools if t.kind == "server"]

    def context_texts(self) -> list[str]:
        """Every text of the request's instructions and turns (where the agent looks for the cwd)."""
        out: list[str] = []
        body = self.body
        if self.dialect == "gemini":
            return gemini_texts(body)
        for key in ("system", "instructions"):
            _collect_text(body.get(key), out)
        turns = body.get("messages") if self.dialect != "responses" else body.get("input")
        if isinstance(turns, str):
            out.append(turns)
        elif isinstance(turns, list):
            for turn in turns:
                if isinstance(turn, dict):
                    _collect_text(turn.get("content"), out)
        return out

    def user_texts(self) -> list[str]:
        """The texts of the user's own turns, in order (tool results and instructions left out)."""
        out: list[str] = []
        turns = self.body.get("messages") if self.dialect != "responses" else self.body.get("input")
        if isinstance(turns, str):
            return [turns]
        for turn in turns if isinstance(turns, list) else []:
            if not isinstance(turn, dict) or turn.get("type", "message") != "message":
                continue  # Responses input items that are not messages (tool calls and their outputs)
            if turn.get("role") == "user":
                _collect_text(turn.get("content"), out)
        return out


def parse_openai(body: Any) -> CallRequest:
    messages = _common(body)
    tools = _chat_tools(body.get("tools"))
    names = [t.name for t in tools]
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
        dialect="openai",
        tools=tools,
        after_tool_result=isinstance(last, dict) and last.get("role") == "tool",
    )


def parse_anthropic(body: Any) -> CallRequest:
    messages = _common(body)
    if "max_tokens" not in body:
        raise bad_request("max_tokens: Field required")
    tools = _anthropic_tools(body.get("tools"))
    names = [t.name for t in tools]
    thinking = _thinking_flag(body.get("thinking"))
    config = body.get("output_config") or {}
    effort = config.get("effort") if isinstance(config, dict) else None
    effort = _norm_effort(effort) if isinstance(effort, str) else ("off" if thinking is False else None)
    last = messages[-1] if messages else {}
    tool_result = isinstance(last, dict) and last.get("role") == "user" and _has_part(last, ("tool_result",))
    fresh_user = isinstance(last, dict) and last.get("role") == "user" and not tool_result
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
        dialect="anthropic",
        tools=tools,
        after_tool_result=tool_result,
    )


def parse_responses(body: Any) -> CallRequest:
    """OpenAI Responses: `input` (a string or a list of items), `instructions`, typed `tools`."""
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise bad_request("Missing required parameter: 'model'.", "missing_required_parameter")
    raw = body.get("input")
    if isinstance(raw, str):
        items: list[Any] = [{"type": "message", "role": "user", "content": raw}]
    elif isinstance(raw, list) and raw:
        items = raw
    elif body.get("previous_response_id"):
        items = []
    else:
        raise bad_request("Missing required parameter: 'input'.", "missing_required_parameter")
    tools = _responses_tools(body.get("tools"))
    reasoning = _schema(body.get("reasoning"))
    effort = reasoning.get("effort")
    summary = reasoning.get("summary") or reasoning.get("generate_summary")
    last = items[-1] if items else {}
    kind = last.get("type", "message") if isinstance(last, dict) else None
    include = body.get("include")
    previous = body.get("previous_response_id")
    return CallRequest(
        body=body,
        model=body["model"],
        stream=bool(body.get("stream")),
        include_usage=True,
        max_tokens=_int_or_none(body.get("max_output_tokens")),
        effort=_norm_effort(effort) if isinstance(effort, str) else None,
        thinking=None,
        tool_names=[t.name for t in tools],
        tool_turn=bool(tools) and kind == "message" and last.get("role") == "user",
        has_images=any(_has_part(i, ("input_image",)) for i in items),
        prompt_tokens=_estimate_tokens(items, body.get("instructions")),
        gateway=_gateway_options(body),
        dialect="responses",
        tools=tools,
        after_tool_result=kind in _RESULT_ITEMS,
        include=tuple(i for i in include if isinstance(i, str)) if isinstance(include, list) else (),
        reasoning_summary=isinstance(summary, str) and summary not in ("none", ""),
        previous_response_id=previous if isinstance(previous, str) else None,
        store=body.get("store") is not False,
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


def _chat_tools(raw: Any) -> list[ToolSpec]:
    """Chat tools: `{"type": "function", "function": {...}}` and `{"type": "custom", "custom": {...}}`."""
    out: list[ToolSpec] = []
    for tool in raw if isinstance(raw, list) else []:
        if not isinstance(tool, dict):
            continue
        kind: ToolKind = "custom" if tool.get("type") == "custom" else "function"
        inner = tool.get(kind)
        inner = inner if isinstance(inner, dict) else tool
        name = inner.get("name")
        if isinstance(name, str) and name:
            out.append(ToolSpec(name, kind, _schema(inner.get("parameters"))))
    return out


def _anthropic_tools(raw: Any) -> list[ToolSpec]:
    """Client tools have an `input_schema` (type absent or "custom"); typed ones (`web_search_20250305`,
    `bash_20250124`, …) are Anthropic's own: server tools run there, the others the sim does not script."""
    out: list[ToolSpec] = []
    for tool in raw if isinstance(raw, list) else []:
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            continue
        kind = tool.get("type")
        if kind in (None, "custom"):
            out.append(ToolSpec(tool["name"], "function", _schema(tool.get("input_schema"))))
        elif isinstance(kind, str) and kind.startswith(_SERVER_TOOL_PREFIXES):
            out.append(ToolSpec(tool["name"], "server"))
        else:
            out.append(ToolSpec(tool["name"], "custom"))  # client-run built-in: named, not scripted
    return out


def _responses_tools(raw: Any) -> list[ToolSpec]:
    out: list[ToolSpec] = []
    for tool in raw if isinstance(raw, list) else []:
        if not isinstance(tool, dict) or not isinstance(tool.get("type"), str):
            continue
        kind, name = tool["type"], tool.get("name")
        if kind == "function" and isinstance(name, str):
            out.append(ToolSpec(name, "function", _schema(tool.get("parameters"))))
        elif kind == "custom" and isinstance(name, str):
            out.append(ToolSpec(name, "custom"))
        elif kind == "local_shell":
            out.append(ToolSpec("local_shell", "local_shell"))
        elif kind.startswith(_SERVER_TOOL_PREFIXES):
            out.append(ToolSpec(kind, "server"))
    return out


def _schema(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _collect_text(content: Any, out: list[str]) -> None:
    if isinstance(content, str):
        out.append(content)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                out.append(part["text"])


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
