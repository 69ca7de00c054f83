"""`modelpool probe`: one bounded probe request per route, with a progress bar."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from modelpool.cli.remote import admin_get, admin_request
from modelpool.cli.render import console, print_json


def _routes(names: list[str], pools: dict[str, Any]) -> list[str]:
    by_pool = {p["id"]: [r["route"] for r in p["routes"] if r["candidate"]] for p in pools["pools"]}
    every_route = {r for routes in by_pool.values() for r in routes}
    if not names:
        return [r for routes in by_pool.values() for r in routes]
    out: list[str] = []
    for name in names:
        out.extend(by_pool.get(name, [name] if name in every_route or "/" in name else []))
    return list(dict.fromkeys(out))


def run_probe(
    names: list[str],
    max_requests: int,
    timeout: float,
    url: str | None,
    token: str | None,
    config: Path | None,
    json: bool,
) -> None:
    from rich.progress import Progress

    routes = _routes(names, admin_get("/admin/pools", url, token, config))[:max_requests]
    results: list[dict[str, Any]] = []
    spent = {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0}
    with Progress(console=console, transient=json, disable=json) as progress:
        task = progress.add_task("probing", total=len(routes))
        for route in routes:
            progress.update(task, description=f"probing {route}")
            report = admin_request(
                "POST",
                "/admin/probe",
                url,
                token,
                config,
                {"models": [route], "max_requests": 1, "timeout": timeout},
            )
            results.extend(report["results"])
            for key in spent:
                spent[key] += report["spent"][key]
            progress.advance(task)
    if json:
        print_json({"results": results, "spent": spent})
        return
    for r in results:
        mark = "[green]ok[/]" if r["ok"] else f"[red]{r['kind']}[/]"
        detail = f"{r['ttft_ms']:.0f} ms" if r["ok"] else r.get("error", "")[:120]
        console.print(f"  {r['route']}: {mark} {detail}")
    console.print(f"spent: {spent['requests']} requests, {spent['completion_tokens']} completion tokens")
