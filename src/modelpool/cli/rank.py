"""`modelpool rank MODEL`: the gateway's ranking (with served-by), or offline from the public stats."""

from __future__ import annotations

import asyncio
import urllib.parse
from pathlib import Path
from typing import Any

import typer

from modelpool.cli.render import print_json


def run_rank(
    model: str,
    refresh: bool,
    session: str | None,
    url: str | None,
    token: str | None,
    json: bool,
    config: Path | None,
) -> None:
    from modelpool.aggregators import render_rank

    report = _remote(model, refresh, session, url, token, config)
    if report is None:
        report = asyncio.run(_offline(model, config))
    if json:
        print_json(report)
    else:
        print(render_rank(report))


def _remote(
    model: str, refresh: bool, session: str | None, url: str | None, token: str | None, config: Path | None
) -> dict[str, Any] | None:
    """The running gateway's ranking (it has the served-by memory); None when no gateway answers."""
    from modelpool.cli.remote import admin_request_if_up

    query = {k: v for k, v in {"refresh": "1" if refresh else None, "session": session}.items() if v}
    path = "/admin/ranking/" + urllib.parse.quote(model, safe="/")
    if query:
        path += "?" + urllib.parse.urlencode(query)
    return admin_request_if_up("GET", path, url, token, config, timeout=30)  # type: ignore[no-any-return]


async def _offline(model: str, config: Path | None) -> dict[str, Any]:
    import aiohttp

    from modelpool.aggregators import AggregatorService
    from modelpool.config import ConfigError, load_config, resolve_api_key
    from modelpool.upstream.providers import api_root

    try:
        cfg = load_config(config).config
    except ConfigError as err:
        typer.echo(str(err), err=True)
        raise typer.Exit(2) from None
    aggregators = [p for p in cfg.providers if p.kind in ("vercel", "openrouter")]
    provider = next((p for p in aggregators if p.models is None or model in p.models), None)
    if provider is None:
        typer.echo(f"no vercel/openrouter provider in the config serves {model!r}", err=True)
        raise typer.Exit(1)
    async with aiohttp.ClientSession() as session:
        svc = AggregatorService(lambda: session, lambda: cfg.gateway_ranking)
        try:
            key = resolve_api_key(provider)
            return await svc.ranking_report(provider.kind, api_root(provider.base_url), key, model)
        finally:
            await svc.close()
