"""`modelpool config import-litellm FILE [-o OUT]`: convert, validate with the real loader, then report.

The YAML goes to OUT (or stdout); the report (what was approximated, what was not mapped and why) goes to
stderr, or with `--json` everything is one JSON document on stdout.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import yaml

from modelpool.cli.litellm_import import Finding, ImportResult, import_litellm
from modelpool.cli.render import print_json


class LiteLLMImportError(Exception):
    """The input is not a LiteLLM proxy config we can read."""


def read_litellm_file(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise LiteLLMImportError(f"{path}: cannot read: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("model_list"), list):
        raise LiteLLMImportError(f"{path}: not a LiteLLM proxy config (no `model_list:` list)")
    return data


def to_yaml(result: ImportResult, source: str) -> str:
    header = (
        f"# modelpool config converted from the LiteLLM proxy config {source}\n"
        "# by `modelpool config import-litellm`; validate with `modelpool config check`.\n"
    )
    return header + yaml.safe_dump(result.config, sort_keys=False, allow_unicode=True, width=110)


# Stands in for variables that are unset here, so validation checks the shape, not this machine's env.
_PLACEHOLDER = "http://env-unset.invalid"


def run_import(file: Path, out: Path | None, force: bool, json: bool) -> int:
    try:
        result = import_litellm(read_litellm_file(file))
    except LiteLLMImportError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    errors = check_result(result)
    if errors:
        print("the converted config is invalid (please report this as a bug):", file=sys.stderr)
        for line in errors:
            print(f"  {line}", file=sys.stderr)
        return 1
    text = to_yaml(result, file.name)
    if out is not None:
        if out.exists() and not force:
            print(f"error: {out} exists (use --force to overwrite)", file=sys.stderr)
            return 2
        out.write_text(text, encoding="utf-8")
    if json:
        print_json({"config": result.config, "written": str(out) if out else None, **result.report()})
    else:
        if out is None:
            sys.stdout.write(text)
        _print_report(result, out)
    return 0


def check_result(result: ImportResult) -> list[str]:
    """Validate with the loader modelpool serves with; note pools whose selectors caught extra routes."""
    from modelpool.catalog.build import build_catalog
    from modelpool.config import ConfigError, load_config

    env = dict(os.environ)
    for var in result.env_vars:
        env.setdefault(var, _PLACEHOLDER)
    try:
        loaded = load_config(result.config, env=env)
    except ConfigError as err:
        return list(err.errors)
    catalog = build_catalog(loaded.config, {})
    for group in loaded.config.pool.groups:
        pool = catalog.pools.get(group.id)
        extra = sorted({r.key for r in pool.routes} - set(group.models)) if pool else []
        if extra:
            result.approximated.append(
                Finding(f"model_name {group.id}", f"its pool also holds {', '.join(extra)} (same model id)")
            )
    return []


def _print_report(result: ImportResult, out: Path | None) -> None:
    err = sys.stderr
    if out is not None:
        print(f"wrote {out}", file=err)
    providers = result.config.get("providers", [])
    pools = result.config.get("pool", {}).get("groups", [])
    print(f"{len(providers)} providers, {len(pools)} pools", file=err)
    approximated = [(f.key, f.text) for f in result.approximated]
    _section(err, "approximated (nearest modelpool behaviour)", approximated)
    _section(err, "not mapped", [(f.key, f.text) for f in result.unmapped])
    if result.env_vars:
        print(f"reads environment variables: {', '.join(result.env_vars)}", file=err)


def _section(err: Any, title: str, rows: list[tuple[str, str]]) -> None:
    if not rows:
        return
    print(f"{title}:", file=err)
    for key, text in rows:
        print(f"  {key}: {text}", file=err)
