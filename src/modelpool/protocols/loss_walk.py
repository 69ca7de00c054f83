"""The walk behind `loss.translation_losses`: a `Loss` and the list a walker fills (see loss.py)."""

from __future__ import annotations

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


class Walk:
    __slots__ = ("losses",)

    def __init__(self) -> None:
        self.losses: list[Loss] = []

    def lose(self, at: str, changes: bool, name: str | None = None, why: str = "") -> None:
        self.losses.append(Loss(name or at, changes, at, why))

    def extra(self, obj: dict[str, Any], where: str, known: Iterable[str]) -> None:
        """Keys of `obj` the translator does not read: harmless, but named."""
        known = set(known)
        for key in obj:
            if key not in known:
                self.lose(f"{where}.{key}" if where else key, False, why="no equivalent")


def has_text(v: Any) -> bool:
    return isinstance(v, str) and v != ""
