"""Configuration errors: every problem on its own line, each led by the key path it concerns.

`config check`, the status page and the log all print these lines, so they must name the place a user
has to edit (`providers[0].base_url`), never pydantic internals (`('providers', 0, 'cost', 'float')`).
Messages never echo input values except where a validator chose to (durations, URLs), so a mistyped
secret does not end up in a log.
"""

from __future__ import annotations

import difflib
import json
import re
import types
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

# A key that reads unambiguously after a dot; anything else is written `["key"]`.
_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_*?\-]+$")
# Union members as a user would name them (pydantic tags members with the type name).
_FRIENDLY_TAGS = {
    "float": "a number",
    "int": "an integer",
    "str": "a string",
    "PeriodCost": "{peak, off_peak}",
}


class ConfigError(Exception):
    """One or more configuration problems, each a line `"<key path>: <message>"`."""

    def __init__(self, errors: Iterable[str] | str, *, path: Path | None = None) -> None:
        self.errors: list[str] = [errors] if isinstance(errors, str) else list(errors)
        self.path = path
        super().__init__(self._render())

    def _render(self) -> str:
        if self.path is None:
            return "\n".join(self.errors)
        count = len(self.errors)
        head = f"invalid config {self.path} ({count} error{'s' if count != 1 else ''}):"
        return "\n".join([head, *(f"  {line}" for line in self.errors)])

    def __str__(self) -> str:
        return self._render()

    def with_path(self, path: Path | None) -> ConfigError:
        return ConfigError(self.errors, path=path)

    @classmethod
    def from_validation(cls, exc: ValidationError, *, path: Path | None = None) -> ConfigError:
        return cls([f"{p}: {m}" for p, m in validation_lines(exc)], path=path)

    @classmethod
    def from_yaml(cls, exc: yaml.YAMLError, *, path: Path | None = None) -> ConfigError:
        return cls([yaml_error_line(exc)], path=path)


def yaml_error_line(exc: yaml.YAMLError) -> str:
    """`line 3, column 7: mapping values are not allowed here` (1-based, as editors count)."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "yaml"
    return f"{where}: {problem}" + (f" ({context})" if context else "")


def format_loc(loc: Sequence[str | int]) -> str:
    """`('providers', 0, 'base_url')` → `providers[0].base_url`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.match(part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part, ensure_ascii=False)}]"
    return out or "(root)"


def validation_lines(exc: ValidationError, root: type[BaseModel] | None = None) -> list[tuple[str, str]]:
    """(key path, message) for every error, with union-member noise folded into one line."""
    if root is None:
        from modelpool.config.schema import Config

        root = Config
    lines: list[tuple[str, str]] = []
    unions: dict[tuple[str | int, ...], list[tuple[list[str | int], str, ErrorDetails]]] = {}
    for err in exc.errors():
        loc, union_at, tag = _strip_union_tags(err["loc"], root)
        if union_at is None:
            lines.append((format_loc(loc), _message(err, loc, root)))
        else:
            unions.setdefault(tuple(loc[:union_at]), []).append((loc, tag, err))
    for prefix, members in unions.items():
        lines.extend(_fold_union(list(prefix), members, root))
    return lines


def _fold_union(
    prefix: list[str | int],
    members: list[tuple[list[str | int], str, ErrorDetails]],
    root: type[BaseModel],
) -> list[tuple[str, str]]:
    # A member whose error lies inside it matched the input's shape: its error is the useful one.
    deep = [(loc, err) for loc, _tag, err in members if len(loc) > len(prefix)]
    if deep:
        return [(format_loc(loc), _message(err, loc, root)) for loc, err in deep]
    expected = " or ".join(dict.fromkeys(_FRIENDLY_TAGS.get(tag, tag) for _loc, tag, _err in members))
    return [(format_loc(prefix), f"invalid value: expected {expected}")]


def _message(err: ErrorDetails, loc: list[str | int], root: type[BaseModel]) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        return _unknown_key_message(loc, root)
    if kind == "missing":
        return "required key is missing"
    msg = str(err["msg"])
    for noise in ("Value error, ", "Assertion failed, "):
        msg = msg.removeprefix(noise)
    return msg


def _unknown_key_message(loc: list[str | int], root: type[BaseModel]) -> str:
    parent = _type_at(loc[:-1], root)
    key = loc[-1] if loc else ""
    if isinstance(parent, type) and issubclass(parent, BaseModel) and isinstance(key, str):
        close = difflib.get_close_matches(key, list(parent.model_fields), n=1)
        if close:
            return f"unknown key; did you mean '{close[0]}'?"
    return "unknown key"


def _unwrap(tp: Any) -> Any:
    """Strip `Annotated[...]` and `X | None` (pydantic reports neither in a loc)."""
    while True:
        origin = get_origin(tp)
        if origin is Annotated:
            tp = get_args(tp)[0]
            continue
        if origin in (Union, types.UnionType):
            args = [a for a in get_args(tp) if a is not type(None)]
            if len(args) == 1:
                tp = args[0]
                continue
        return tp


def _child(tp: Any, part: str | int) -> Any:
    tp = _unwrap(tp)
    origin = get_origin(tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        field = tp.model_fields.get(str(part))
        return field.annotation if field is not None else Any
    if origin is list:
        return get_args(tp)[0]
    if origin is dict:
        return get_args(tp)[1]
    return Any


def _type_at(loc: Sequence[str | int], root: type[BaseModel]) -> Any:
    tp: Any = root
    for part in loc:
        tp = _child(tp, part)
    return _unwrap(tp)


def _tag(tp: Any) -> str:
    return tp.__name__ if isinstance(tp, type) else str(tp)


def _strip_union_tags(
    raw_loc: Sequence[str | int], root: type[BaseModel]
) -> tuple[list[str | int], int | None, str]:
    """Drop the member tag pydantic inserts after a union field; say where the union was."""
    tp: Any = root
    loc: list[str | int] = []
    union_at: int | None = None
    tag = ""
    for part in raw_loc:
        tp = _unwrap(tp)
        if get_origin(tp) in (Union, types.UnionType):
            members = {_tag(m): m for m in get_args(tp) if m is not type(None)}
            if isinstance(part, str) and part in members:
                union_at, tag, tp = len(loc), part, members[part]
                continue
        loc.append(part)
        tp = _child(tp, part)
    return loc, union_at, tag
