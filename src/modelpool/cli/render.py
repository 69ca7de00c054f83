"""Rich tables for people; `--json` prints the admin API's answer as is."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

console = Console()

STATE_STYLE = {"ok": "green", "degraded": "yellow", "unavailable": "red", "unknown": "dim", "off": "dim"}


def print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False))


def _fmt_remaining(seconds: float) -> str:
    if seconds <= 0:
        return ""
    if seconds >= 3600:
        return f"{seconds / 3600:.1f}h"
    if seconds >= 60:
        return f"{seconds / 60:.0f}m"
    return f"{seconds:.0f}s"


def _state_cell(row: dict[str, Any]) -> str:
    state = row["state"]
    text = f"[{STATE_STYLE.get(state, '')}]{state}[/]"
    if row.get("mark"):
        text += f" {row['mark']} {_fmt_remaining(row['rest_remaining'])}"
    if state == "off" and row.get("off_reason"):
        text += f" ({row['off_reason']})"
    return text


def render_pools(data: dict[str, Any]) -> None:
    table = Table(title=f"pools (strategy: {data.get('strategy')})")
    for col in ("pool", "route", "state", "TTFT", "tok/s", "ok/attempts", "images", "context", "efforts"):
        table.add_column(col)
    for pool in data["pools"]:
        first = True
        for r in pool["routes"]:
            table.add_row(
                pool["id"] if first else "",
                r["route"],
                _state_cell(r),
                f"{r['ewma_ttft_ms']:.0f} ms" if r.get("ewma_ttft_ms") is not None else "",
                f"{r['median_tps']:.0f}" if r.get("median_tps") is not None else "",
                f"{r['successes']}/{r['attempts']}",
                "yes" if r.get("images") else "",
                str(pool.get("context_window") or "") if first else "",
                ",".join(pool.get("efforts") or []) if first else "",
            )
            first = False
    console.print(table)


def _render_quota(rows: list[dict[str, Any]]) -> None:
    """SPEC §3.8: the routes demoted for their announced quota, and until when."""
    low = [(r["route"], r["quota"]["low"]) for r in rows if (r.get("quota") or {}).get("low")]
    if low:
        console.print("[bold]quota seen running out[/]")
        for route, why in low:
            console.print(f"  {route}: {escape(why)}")


TIMEOUT_KEYS = ("connect", "first_byte", "idle", "response")


def _render_timeouts(rows: list[dict[str, Any]]) -> None:
    """SPEC §3.9: each route's time limits in force and the layer each comes from, one line per route
    (unwrapped, so a line stays greppable). Routes on the defaults alone are summed up in one line (a
    catalog may hold thousands)."""
    own = [r for r in rows if any(v["layer"] != "default" for v in (r.get("timeouts") or {}).values())]
    plain = [r for r in rows if r.get("timeouts") and r not in own]
    if not own and not plain:
        return
    console.print("[bold]time limits per route[/]")
    for r in own:
        console.print(f"  {escape(r['route'])}: {_limits(r['timeouts'])}", soft_wrap=True)
    if plain:
        console.print(f"  {len(plain)} other route(s): {_limits(plain[0]['timeouts'])}", soft_wrap=True)


def _limits(timeouts: dict[str, Any]) -> str:
    parts = [
        f"{k} {_seconds(timeouts[k]['seconds'])} [dim]{escape('[' + timeouts[k]['layer'] + ']')}[/]"
        for k in TIMEOUT_KEYS
    ]
    return " · ".join(parts)


def _seconds(value: float) -> str:
    return f"{value * 1000:.0f}ms" if value < 1 else f"{value:g}s"


def render_status(data: dict[str, Any]) -> None:
    console.print(f"[bold]modelpool {data['version']}[/] — enabled: {data['enabled']}")
    console.print(f"config: {data['config_path'] or '(environment)'} (version {data['config_version']})")
    if data.get("config_error"):
        console.print("[red]last config edit rejected:[/]")
        for line in data["config_error"]:
            console.print(f"  {line}")
    state = data["state"]
    where = state.get("path") or state.get("url") or ""
    console.print(f"state backend: {state.get('backend')} {where} healthy={state.get('healthy')}")
    if not state.get("healthy", True):
        # e.g. redis unreachable: the gateway keeps routing on local memory and says so (SPEC §9)
        console.print(f"[yellow]state: {state.get('status', 'degraded')}[/] — {state.get('last_error', '')}")
    console.print(f"discovered: {data['discovered']['pools']} pools, {data['discovered']['routes']} routes")
    for w in data.get("warnings", []):
        console.print(f"[yellow]warning:[/] {w}")
    table = Table(title="routes")
    for col in ("route", "state", "TTFT", "tok/s", "sampled", "success", "last kind"):
        table.add_column(col)
    for r in data["ranking"]:
        ttft = f"{r['ewma_ttft_ms']:.0f} ms" if r.get("ewma_ttft_ms") is not None else ""
        tps = f"{r['median_tps']:.0f}" if r.get("median_tps") is not None else ""
        age = f"{r['sample_age_s']:.0f} s ago" if r.get("sample_age_s") is not None else ""
        table.add_row(
            r["route"],
            _state_cell(r),
            ttft,
            tps,
            age,
            f"{r['success_rate']:.2f}",
            r.get("last_error_kind") or "",
        )
    console.print(table)
    _render_quota(data["ranking"])
    _render_timeouts(data["ranking"])
    if data["last_failures"]:
        console.print("[bold]last failure seen[/]")
        for f in data["last_failures"]:
            console.print(f"  {f['route']}: {f['kind']} — {escape(f['error'][:160])}")
    console.print("[bold]in force right now[/]")
    for s in data["in_force"]:
        value = json.dumps(s["value"], ensure_ascii=False)
        console.print(f"  {s['key']} = {escape(value[:100])} [dim]{escape('[' + s['layer'] + ']')}[/]")
