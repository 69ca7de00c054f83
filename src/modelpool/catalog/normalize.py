"""Model-id normalization (SPEC §2): the key that puts the same model on several providers in one pool.

The rule, in full:

1. strip surrounding whitespace and lowercase the id;
2. keep only the last non-empty `/`-separated segment, which drops any vendor path prefix
   (`deepseek/deepseek-v4.1-flash` → `deepseek-v4.1-flash`,
   `accounts/fireworks/models/glm-5.3-flash` → `glm-5.3-flash`, `BAAI/bge-m3` → `bge-m3`).

Nothing else is stripped: suffixes such as `-1017`, `:free` or `-instruct` name a different build or
offer, and folding them silently would merge models the user never asked to merge. Configured groups
(`pool.groups`) exist for exactly that case.
"""

from __future__ import annotations

import re
from functools import lru_cache


@lru_cache(maxsize=8192)
def normalize_model_id(model_id: str) -> str:
    """Lowercase `model_id` and keep its last path segment (see the module docstring)."""
    lowered = model_id.strip().lower()
    segments = [s for s in lowered.split("/") if s]
    return segments[-1] if segments else lowered


_FAMILY_SPLIT = re.compile(r"[-_.:/ ]")


def family(model_id: str) -> str:
    """The model family, for cross-model fallback: `deepseek-v4.1-flash` → `deepseek`; `glm-5.3-flash` →
    `glm`; `qwen3-vl-8b` → `qwen3`."""
    return _FAMILY_SPLIT.split(model_id.lower(), 1)[0]
