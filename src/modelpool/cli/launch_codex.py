"""Codex wired to the gateway (SPEC §1.7): a `modelpool` provider and a model catalogue with the pool.

Codex gives a slug missing from its catalogue "fallback metadata": a 272k window and no `apply_patch`
tool. The catalogue written here (`model_catalog_json`) holds one entry, the pool's, cloned from the
installed Codex's own bundled catalogue (`codex debug models --bundled`) so it fits that version.
`CODEX_HOME` is private: `config.toml` is the user's with modelpool's keys laid over it, everything else
of theirs (auth, sessions, history) is linked.
"""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path
from typing import Any

from modelpool.agents import codex
from modelpool.cli.launch_setup import Context, Setup, fail, link_user_files, merged

CATALOGUE = "modelpool-models.json"
OWN = {"config.toml", CATALOGUE}
KEY_VAR = "MODELPOOL_API_KEY"


def user_dir(ctx: Context) -> Path:
    given = os.environ.get("CODEX_HOME")
    return Path(given) if given else ctx.user_home / ".codex"


def bundled(binary: str) -> list[dict[str, Any]]:
    try:
        out = subprocess.run(
            [binary, "debug", "models", "--bundled"], capture_output=True, text=True, timeout=60, check=True
        ).stdout
        models = json.loads(out)["models"]
    except (OSError, subprocess.SubprocessError, ValueError, KeyError) as err:
        fail(f"`{binary} debug models --bundled` did not give Codex's catalogue ({err})")
    return list(models)


def setup(ctx: Context) -> Setup:
    template = codex.pick_template(bundled(ctx.binary))
    entry = codex.model_info(template, ctx.pool)
    mine = user_dir(ctx)
    catalogue = ctx.home / CATALOGUE
    ours = {
        "model": ctx.model,
        "model_provider": "modelpool",
        "model_catalog_json": str(catalogue),
        "model_providers": {
            "modelpool": {
                "name": "modelpool",
                "base_url": ctx.url + "/v1",
                "env_key": KEY_VAR,
                "wire_api": "responses",
            }
        },
    }
    config = merged(_read_toml(mine / "config.toml"), ours)
    return Setup(
        env={"CODEX_HOME": str(ctx.home), KEY_VAR: ctx.key},
        files={
            ctx.home / "config.toml": dump_toml(config),
            catalogue: json.dumps({"models": [entry]}, indent=1) + "\n",
        },
        links=link_user_files(mine, ctx.home, OWN),
    )


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as err:
        fail(f"{path}: not valid TOML ({err})")
    return {}


def dump_toml(table: dict[str, Any], prefix: str = "") -> str:
    """TOML for a parsed config (tables, arrays, strings, numbers, booleans, dates): top-level keys first,
    then each sub-table under its dotted header."""
    lines: list[str] = []
    subs: list[tuple[str, dict[str, Any]]] = []
    for key, value in table.items():
        if isinstance(value, dict):
            subs.append((f"{prefix}{_key(key)}", value))
        else:
            lines.append(f"{_key(key)} = {_value(value)}")
    out = "\n".join(lines) + ("\n" if lines else "")
    for name, sub in subs:
        body = dump_toml(sub, name + ".")
        out += f"\n[{name}]\n{body}" if any(not isinstance(v, dict) for v in sub.values()) else body
    return out


def _key(key: str) -> str:
    bare = key and all(c.isalnum() or c in "-_" for c in key)
    return key if bare else json.dumps(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    return str(value)  # dates and times: TOML's own literal form
