"""`modelpool period` and `modelpool calendar`.

`period` needs no server: it reads the config and the cached calendar. `calendar` asks the running
gateway (so `sync` refreshes the calendar routing actually uses) and falls back to the local cache when no
gateway answers.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path
from typing import Any

import typer

from modelpool.cli.render import console, print_json


def _local_store(config: Path | None) -> Any:
    from modelpool.config import ConfigError, load_config, state_dir
    from modelpool.periods import CalendarStore, default_cache_path

    try:
        loaded = load_config(config)
    except ConfigError as err:
        typer.echo(str(err), err=True)
        raise typer.Exit(2) from None
    cfg = loaded.config
    store = CalendarStore(default_cache_path(state_dir(cfg)), cfg.holidays, time_zone=cfg.peak.time_zone)
    store.load()
    return cfg, store


def run_period(at: str | None, json: bool, config: Path | None) -> None:
    from modelpool.periods import period_report

    cfg, store = _local_store(config)
    try:
        when = datetime.fromisoformat(at) if at else None
    except ValueError:
        typer.echo(f"--at: not an ISO 8601 moment: {at!r}", err=True)
        raise typer.Exit(2) from None
    try:
        report = period_report(store.policy(cfg.peak, cfg.holidays), when)
    except ValueError as exc:  # a moment at the calendar's ends
        typer.echo(f"--at: {exc}", err=True)
        raise typer.Exit(2) from None
    if json:
        print_json(report)
        return
    _render_period(report)


def _render_period(report: dict[str, Any]) -> None:
    for key in ("period", "local", "why", "reason", "next_flip", "next_flip_in"):
        if report.get(key) is not None:
            console.print(f"{key}: {report[key]}")
    for w in report.get("warnings") or []:
        console.print(f"[yellow]warning:[/] {w}")


def run_calendar(sync: bool, url: str | None, token: str | None, json: bool, config: Path | None) -> None:
    report = _remote_calendar(sync, url, token, config)
    if report is None:
        from modelpool.periods import calendar_report

        _, store = _local_store(config)
        if sync:
            asyncio.run(store.sync(force=True))
        report = calendar_report(store)
        report["served_by"] = "local cache (no gateway answered)"
    if json:
        print_json(report)
        return
    for key, value in report.items():
        console.print(f"{key}: {value}")


def _remote_calendar(
    sync: bool, url: str | None, token: str | None, config: Path | None
) -> dict[str, Any] | None:
    from modelpool.cli.remote import admin_request_if_up

    if sync:
        return admin_request_if_up("POST", "/admin/calendar/sync", url, token, config)  # type: ignore[no-any-return]
    return admin_request_if_up("GET", "/admin/calendar", url, token, config)  # type: ignore[no-any-return]
