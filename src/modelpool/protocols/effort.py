"""Thinking depth (effort) across dialects: read, map to a route's tiers, write (SPEC §3.1 step 9).

Tiers, ordered: off < minimal < low < medium < high < xhigh < max.

Anthropic `thinking.budget_tokens` has no tier of its own; budgets read as tiers by these thresholds
(Claude Code's "think" 4000 → medium, "think hard" 10000 → high, "ultrathink" 31999 → max):

    budget ≤ 0 → off · ≤ 1024 → minimal · ≤ 2048 → low · ≤ 8192 → medium · ≤ 16384 → high
    · ≤ 24576 → xhigh · larger → max

and tiers are written back as the top budget of their band (`TIER_BUDGET`), so read(write(t)) == t.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

TIERS: tuple[str, ...] = ("off", "minimal", "low", "medium", "high", "xhigh", "max")
RANK = {t: i for i, t in enumerate(TIERS)}

# Upper bound of each band; the write side uses the same numbers.
_BUDGET_BANDS = (
    (0, "off"),
    (1024, "minimal"),
    (2048, "low"),
    (8192, "medium"),
    (16384, "high"),
    (24576, "xhigh"),
)
TIER_BUDGET = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 24576, "max": 32000}
# Anthropic's output_config.effort only knows these; lower tiers are written as low.
_ANTHROPIC_EFFORTS = ("low", "medium", "high", "xhigh", "max")
_ALIASES = {"none": "off", "disabled": "off", "ultra": "max", "maximum": "max", "extra-high": "xhigh"}


def normalize(effort: Any) -> str | None:
    """A known tier name, or None for anything we cannot place (the request then carries no effort)."""
    if not isinstance(effort, str):
        return None
    e = effort.strip().lower()
    e = _ALIASES.get(e, e)
    return e if e in RANK else None


def nearest_effort(requested: str | None, supported: Sequence[str] | None) -> str | None:
    """Exact tier first, else the smallest rank distance, ties to the higher tier.

    `supported` None means the route did not declare its tiers: the request passes through unchanged.
    An empty list means the route has no effort control: None (write nothing)."""
    if requested is None or supported is None:
        return requested
    if requested in supported:
        return requested
    want = RANK.get(requested)
    known = [s for s in supported if s in RANK]
    if want is None or not known:
        return None
    # min over (distance, -rank): equal distance prefers the higher tier.
    return min(known, key=lambda s: (abs(RANK[s] - want), -RANK[s]))


def union_efforts(per_route: Iterable[Sequence[str] | None]) -> tuple[str, ...] | None:
    """The pool's advertised efforts, ordered by tier; None when no route declared any."""
    seen: set[str] = set()
    known = False
    for efforts in per_route:
        if efforts is not None:
            known = True
            seen.update(efforts)
    return tuple(t for t in TIERS if t in seen) if known else None


def budget_tier(budget: Any) -> str | None:
    if not isinstance(budget, int) or isinstance(budget, bool):
        return None
    for top, tier in _BUDGET_BANDS:
        if budget <= top:
            return tier
    return "max"


def _thinking_tier(thinking: Any) -> str | None:
    if not isinstance(thinking, dict):
        return None
    kind = thinking.get("type")
    if kind == "disabled":
        return "off"
    if kind == "enabled":
        # DeepSeek's switch carries no budget and means its default depth, high (gateways.md §6.3).
        return budget_tier(thinking.get("budget_tokens")) or "high"
    return None  # adaptive: the model decides; only output_config.effort says more


def read_effort(dialect: str, body: dict[str, Any]) -> str | None:
    """The effort a request asks for, in tiers. An explicit switch-off wins over any effort field."""
    thinking = _thinking_tier(body.get("thinking"))
    if thinking == "off":
        return "off"
    explicit: Any = None
    if dialect == "openai":
        explicit = body.get("reasoning_effort")
        if explicit is None and isinstance(body.get("reasoning"), dict):  # OpenRouter style
            explicit = body["reasoning"].get("effort")
    elif dialect == "anthropic":
        cfg = body.get("output_config")
        explicit = cfg.get("effort") if isinstance(cfg, dict) else None
    elif dialect == "responses":
        reasoning = body.get("reasoning")
        explicit = reasoning.get("effort") if isinstance(reasoning, dict) else None
    elif dialect == "gemini":
        return gemini_tier(body)
    return normalize(explicit) or thinking


def _gemini_thinking(body: dict[str, Any]) -> dict[str, Any] | None:
    config = body.get("generationConfig", body.get("generation_config"))
    if not isinstance(config, dict):
        return None
    thinking = config.get("thinkingConfig", config.get("thinking_config"))
    return thinking if isinstance(thinking, dict) else None


def gemini_tier(body: dict[str, Any]) -> str | None:
    """Gemini `thinkingConfig`: `thinkingLevel` (MINIMAL…HIGH) names a tier; `thinkingBudget` reads by
    the budget bands (0 = off; -1, dynamic, says no tier)."""
    thinking = _gemini_thinking(body)
    if thinking is None:
        return None
    level = thinking.get("thinkingLevel", thinking.get("thinking_level"))
    if isinstance(level, str) and normalize(level) is not None:
        return normalize(level)
    budget = thinking.get("thinkingBudget", thinking.get("thinking_budget"))
    if budget == -1:
        return None
    return budget_tier(budget)


def write_effort(
    dialect: str, body: dict[str, Any], effort: str | None, route_efforts: Sequence[str] | None = None
) -> dict[str, Any]:
    """Write `effort` (already mapped with `nearest_effort`) in `dialect`, replacing whatever effort
    fields the body had, so it can be called once per attempt on the same translated body.

    None means "say nothing": every effort field is removed and the route uses its default."""
    out = dict(body)
    if dialect == "anthropic":
        _write_anthropic(out, effort, route_efforts)
    elif dialect == "gemini":
        _write_gemini(out, effort)
    elif dialect == "responses":
        out.pop("reasoning", None)
        if effort is not None:
            out["reasoning"] = {
                **(body.get("reasoning") or {}),
                "effort": "none" if effort == "off" else effort,
            }
    else:
        out.pop("reasoning_effort", None)
        out.pop("thinking", None)
        if effort == "off":
            # DeepSeek-style switch; reasoning_effort has no portable "off".
            out["thinking"] = {"type": "disabled"}
        elif effort is not None:
            out["reasoning_effort"] = effort
    return out


def _write_anthropic(out: dict[str, Any], effort: str | None, route_efforts: Sequence[str] | None) -> None:
    out.pop("thinking", None)
    cfg = dict(out.pop("output_config", None) or {})
    cfg.pop("effort", None)
    if effort == "off":
        out["thinking"] = {"type": "disabled"}
    elif effort is not None and _unsigned_tool_turn(out.get("messages")):
        # Anthropic rejects thinking when the last assistant turn used a tool without its (signed)
        # thinking block — history from a non-Anthropic route. Leave thinking off for this request
        # rather than fail it (LiteLLM does the same).
        pass
    elif effort is not None:
        budget = TIER_BUDGET.get(effort, TIER_BUDGET["high"])
        max_tokens = out.get("max_tokens")
        if not isinstance(max_tokens, int) or max_tokens < 1:
            max_tokens = 4096
        if max_tokens <= budget:
            # Anthropic counts thinking inside max_tokens and requires budget < max_tokens; keep the
            # client's answer room on top of the budget instead of starving the thinking.
            max_tokens += budget
        out["max_tokens"] = max_tokens
        out["thinking"] = {"type": "enabled", "budget_tokens": budget}
        # Extended thinking rejects a modified temperature/top_k.
        out.pop("temperature", None)
        out.pop("top_k", None)
        top_p = out.get("top_p")
        if isinstance(top_p, int | float) and top_p < 0.95:
            out.pop("top_p")
        if route_efforts:
            cfg["effort"] = effort if effort in _ANTHROPIC_EFFORTS else "low"
    if cfg:
        out["output_config"] = cfg


_GEMINI_LEVELS = {"minimal": "MINIMAL", "low": "LOW", "medium": "MEDIUM"}


def _write_gemini(out: dict[str, Any], effort: str | None) -> None:
    """The tier as the client said it: a level when it sent a level, else a budget (0 = off)."""
    key = "generation_config" if "generation_config" in out else "generationConfig"
    config = dict(out.get(key) or {})
    thinking = dict(_gemini_thinking(out) or {})
    level = "thinkingLevel" in thinking or "thinking_level" in thinking
    for name in ("thinkingLevel", "thinking_level", "thinkingBudget", "thinking_budget"):
        thinking.pop(name, None)
    if effort is not None and level and effort != "off":
        thinking["thinkingLevel"] = _GEMINI_LEVELS.get(effort, "HIGH")
    elif effort is not None:
        thinking["thinkingBudget"] = 0 if effort == "off" else TIER_BUDGET.get(effort, TIER_BUDGET["high"])
    config.pop("thinking_config", None)
    config.pop("thinkingConfig", None)
    if thinking:
        config["thinkingConfig"] = thinking
    out[key] = config


def _unsigned_tool_turn(messages: Any) -> bool:
    if not isinstance(messages, list):
        return False
    for msg in reversed(messages):
        if isinstance(msg, dict) and msg.get("role") == "assistant":
            content = msg.get("content")
            if not isinstance(content, list) or not content:
                return False
            uses_tool = any(isinstance(b, dict) and b.get("type") == "tool_use" for b in content)
            first = content[0].get("type") if isinstance(content[0], dict) else None
            return uses_tool and first not in ("thinking", "redacted_thinking")
    return False
