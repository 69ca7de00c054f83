"""The walk behind `loss.translation_losses`: a `Loss` and the list a walker fills (see loss.py)."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

HOSTED = "needs the provider's own servers"


@dataclass(frozen=True, slots=True)
class Loss:
    field: str  # the name a client recognises: "tools[web_search]", "top_k", "input[3].encrypted_content"
    changes_answer: bool
    at: str  # where it is in the client body ("tools[2]"); equal to `field` except for named tools
    why: str = ""
    # A hosted tool the client only offers (SPEC §1.6): left out by default, refused only under
    # `pool.lossy_translation: refuse`. Conversation content (results already in the history) is not.
    offered: bool = False


class Walk:
    __slots__ = ("losses",)

    def __init__(self) -> None:
        self.losses: list[Loss] = []

    def lose(
        self, at: str, changes: bool, name: str | None = None, why: str = "", offered: bool = False
    ) -> None:
        self.losses.append(Loss(name or at, changes, at, why, offered))

    def extra(self, obj: dict[str, Any], where: str, known: Iterable[str]) -> None:
        """Keys of `obj` the translator does not read: harmless, but named."""
        names = known if isinstance(known, frozenset | set) else _names(tuple(known))
        if obj.keys() <= names:
            return  # the usual case, decided in C: nothing to name
        for key in obj:
            if key not in names:
                self.lose(f"{where}.{key}" if where else key, False, why="no equivalent")


@functools.lru_cache(maxsize=256)
def _names(known: tuple[str, ...]) -> frozenset[str]:
    """The callers' literal tuples as sets, made once (the walk runs on every call a route translates)."""
    return frozenset(known)


PLAIN_ROLES = frozenset({"system", "developer", "user", "assistant"})
ROLE_AND_CONTENT = frozenset({"role", "content"})


def plain_message(msg: Any) -> bool:
    """A message with a text content and nothing else: every translation carries it whole, so the walk
    skips it without building its path (agent conversations are hundreds of such messages)."""
    return (
        type(msg) is dict
        and msg.keys() <= ROLE_AND_CONTENT
        and isinstance(msg.get("content"), str)
        and msg.get("role") in PLAIN_ROLES
    )


def has_text(v: Any) -> bool:
    return isinstance(v, str) and v != ""
