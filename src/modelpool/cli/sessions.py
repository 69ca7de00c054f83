"""`modelpool sessions [ID]` (SPEC §8): the sessions with their calls and cost so far, or one session's
calls — route, attempts, switches, hedges, tokens, cost, time to first token, outcome — over the admin API."""

from __future__ import annotations

import time
from typing import Any

from rich.markup import escape
from rich.table import Table

from modelpool.cli.render import console


def _usd(value: float | None) -> str:
    if value is None:
        return "—"
    return f"${value:.6f}" if value < 1 else f"${value:,.2f}"


def _when(at: float | None, fmt: str = "%Y-%m-%d %H:%M:%S") -> str:
    return time.strftime(fmt, time.localtime(at)) if at else "—"


def _num(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else "—"


def render_sessions(data: dict[str, Any]) -> None:
    rows = data["sessions"]
    if not rows:
        console.print("no sessions yet")
        return
    table = Table(title="Sessions (most recently active first)")
    for name in ("session", "pool", "route", "calls", "tokens in", "tokens out", "cost", "last call"):
        table.add_column(
            name, justify="right" if name in ("calls", "tokens in", "tokens out", "cost") else "left"
        )
    for s in rows:
        table.add_row(
            escape(s["session"]),
            escape(str(s.get("pool") or "—")),
            escape(str(s.get("route") or s.get("last_route") or "—")),
            _num(s.get("calls")),
            _num(s.get("tokens_in")),
            _num(s.get("tokens_out")),
            _usd(s.get("cost_usd")),
            _when(s.get("last_at") or s.get("at"), "%m-%d %H:%M"),
        )
    console.print(table)


def _attempts(call: dict[str, Any]) -> str:
    parts = [a["route"] if a.get("kind") is None else f"{a['route']} ({a['kind']})" for a in call["attempts"]]
    return escape(" → ".join(parts)) or "—"


def render_session(data: dict[str, Any]) -> None:
    summary = data.get("summary") or {}
    live = data.get("live_route") or {}
    console.print(f"[bold]session[/] {escape(data['session'])}")
    if live:
        where = f"model {escape(live['model'])}, pool {escape(live['pool'])}"
        console.print(f"  live route: {escape(live['route'])} ({where})")
    if summary:
        console.print(
            f"  {summary['calls']} calls ({summary['failed']} failed), {summary['tokens_in']:,} tokens in, "
            f"{summary['tokens_out']:,} out, {_usd(summary['cost_usd'])}; "
            f"{_when(summary['first_at'])} → {_when(summary['last_at'])}"
        )
    calls = data.get("calls") or []
    if not calls:
        console.print("  no calls recorded")
        return
    table = Table(title=f"Calls (the last {data.get('calls_kept', len(calls))} are kept)")
    heads = (
        "time",
        "route",
        "attempts",
        "switches",
        "hedged",
        "in",
        "out",
        "cost",
        "TTFT",
        "latency",
        "outcome",
    )
    for name in heads:
        table.add_column(
            name, justify="right" if name in ("in", "out", "cost", "TTFT", "latency") else "left"
        )
    for c in calls:
        switches = ", ".join(f"{s['from']} → {s['to']} ({s['kind']})" for s in c.get("switches") or [])
        table.add_row(
            _when(c.get("at"), "%H:%M:%S"),
            escape(str(c.get("route") or "—"))
            + (f" [dim]{escape(c['purpose'])}[/]" if c.get("purpose") else ""),
            _attempts(c),
            escape(switches) or "—",
            escape(c.get("hedged") or "—"),
            _num(c.get("tokens_in")),
            _num(c.get("tokens_out")),
            _usd(c.get("cost_usd")),
            f"{c['ttft_ms']:.0f} ms" if c.get("ttft_ms") is not None else "—",
            f"{c['latency_ms']:.0f} ms" if c.get("latency_ms") is not None else "—",
            escape(str(c.get("outcome"))),
        )
    console.print(table)
