"""What every `modelpool launch` builder shares: the context it starts from, the setup it returns, and the
small file helpers (the user's files linked, never edited; JSON settings laid over theirs)."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import typer


@dataclass
class Context:
    """What every CLI's setup starts from."""

    cli: str
    binary: str
    url: str  # the gateway's root, no trailing slash
    key: str
    pool: dict[str, Any]  # the pool's `/v1/models` row
    home: Path  # the private home for this CLI and pool
    user_home: Path

    @property
    def model(self) -> str:
        return str(self.pool["id"])

    @property
    def window(self) -> int | None:
        value = self.pool.get("agent_context_window") or self.pool.get("context_window")
        return int(value) if value else None


@dataclass
class Setup:
    env: dict[str, str] = field(default_factory=dict)
    files: dict[Path, str] = field(default_factory=dict)  # written before the run
    links: dict[Path, Path] = field(default_factory=dict)  # private path → the user's own file or folder
    args: list[str] = field(default_factory=list)  # before the user's own arguments
    unset: list[str] = field(default_factory=list)  # variables of the user's that would override ours


def link_user_files(user_dir: Path, private_dir: Path, own: set[str]) -> dict[Path, Path]:
    """Every entry of the user's folder linked into the private one, except those modelpool writes."""
    if not user_dir.is_dir():
        return {}
    return {private_dir / p.name: p for p in sorted(user_dir.iterdir()) if p.name not in own}


def merged(base: Any, over: Any) -> Any:
    """`over` laid on `base`: tables merge key by key, anything else is replaced."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = merged(base.get(k), v)
        return out
    return over


def read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except ValueError as err:
        fail(f"{path}: not valid JSON ({err})")
    return value if isinstance(value, dict) else {}


def fail(message: str) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    raise typer.Exit(2)
