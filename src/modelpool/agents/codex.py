"""A Codex `ModelInfo` for a pool, cloned from a Codex catalogue entry (SPEC §1.7).

Codex sizes its context, compaction and tools from its catalogue by model slug; an unknown slug gets
"fallback metadata" — a 272k window and no `apply_patch` tool. Its catalogue entries carry far more than
modelpool knows (base instructions, shell type, truncation policy), so the entry for a pool is a copy of a
real one — a model with the freeform `apply_patch` tool that is not `code_mode_only` (such an entry
offers no tools at all) — with what is the pool's own changed: slug, names, window, auto-compact limit,
reasoning levels, input modalities; no upgrade notice and no priority service tiers.

`modelpool launch codex` clones from the installed Codex's own `codex debug models --bundled`, so the
entry fits that version; the gateway's `/v1/models?client_version=…` clones the entry shipped in
`data/codex_model_template.json` (taken from Codex 0.171.0).
"""

from __future__ import annotations

import copy
import json
from importlib import resources
from typing import Any

PREFERRED = "gpt-5.5"
# modelpool's effort tiers Codex has a reasoning level for (`off` has none: such a call sends no effort).
_CODEX_EFFORTS = ("minimal", "low", "medium", "high", "xhigh", "max")
_DESCRIPTIONS = {
    "minimal": "Fastest responses with the least reasoning",
    "low": "Fast responses with lighter reasoning",
    "medium": "Balances speed and reasoning depth for everyday tasks",
    "high": "Greater reasoning depth for complex problems",
    "xhigh": "Extra high reasoning depth for complex problems",
    "max": "The deepest reasoning the model offers",
}
AUTO_COMPACT = 0.9  # compact at 90 % of the window, before the upstream refuses


def pick_template(models: list[dict[str, Any]]) -> dict[str, Any]:
    """The entry to clone: `gpt-5.5` when it fits, else the first listed one that fits."""
    fits = [
        m
        for m in models
        if m.get("apply_patch_tool_type") == "freeform" and m.get("tool_mode") != "code_mode_only"
    ]
    if not fits:
        raise ValueError("no catalogue entry with the freeform apply_patch tool outside code mode")
    for m in fits:
        if m.get("slug") == PREFERRED:
            return m
    listed = [m for m in fits if m.get("visibility") == "list"]
    return (listed or fits)[0]


def shipped_template() -> dict[str, Any]:
    text = (resources.files("modelpool") / "data" / "codex_model_template.json").read_text()
    model: dict[str, Any] = json.loads(text)["model"]
    return model


def model_info(template: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    """The entry for one `/v1/models` row (`id`, `name`, `agent_context_window`, `efforts`,
    `input_modalities`)."""
    entry = copy.deepcopy(template)
    entry.pop("model_messages", None)  # the template model's own prompts per mode; base_instructions stay
    slug = row["id"]
    window = row.get("agent_context_window") or row.get("context_window")
    entry.update(
        slug=slug,
        display_name=row.get("name") or slug,
        description=f"modelpool pool {slug} ({len(row.get('routes') or [])} routes)",
        upgrade=None,
        availability_nux=None,
        visibility="list",
        priority=0,
        additional_speed_tiers=[],
        service_tiers=[],
    )
    if window:
        entry.update(
            context_window=window,
            max_context_window=window,
            auto_compact_token_limit=int(window * AUTO_COMPACT),
        )
    levels = [e for e in row.get("efforts") or () if e in _CODEX_EFFORTS]
    if levels:
        entry["supported_reasoning_levels"] = [{"effort": e, "description": _DESCRIPTIONS[e]} for e in levels]
        entry["default_reasoning_level"] = "medium" if "medium" in levels else levels[len(levels) // 2]
    modalities = [m for m in row.get("input_modalities") or ["text"] if m in ("text", "image")]
    entry["input_modalities"] = modalities or ["text"]
    return entry


def catalogue(template: dict[str, Any], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [model_info(template, row) for row in rows]
