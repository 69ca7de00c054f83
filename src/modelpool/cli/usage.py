"""`modelpool usage` and `modelpool keys` (SPEC §14): rich tables over `/admin/usage` and `/admin/keys`."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from modelpool.cli.render import console


def _usd(value: float) -> str:
    return f"${value:.6f}" if value < 1 else f"${value:,.2f}"


def render_usage(data: dict[str, Any]) -> None:
    by = data["group_by"]
    span = f"{data.get('since') or '…'} → {data.get('until') or '…'}"
    table = Table(title=f"Usage by {by} ({span}, UTC days)")
    table.add_column(by)
    for name in ("calls", "tokens in", "cached", "cache write", "tokens out", "cost", "estimated"):
        table.add_column(name, justify="right")
    for row in [*data["rows"], {by: "[bold]total[/]", **data["total"]}]:
        label = row[by] if row[by].startswith("[bold]") else escape(str(row[by]))
        table.add_row(
            label,
            str(row["calls"]),
            f"{row['tokens_in']:,}",
            f"{row['tokens_cached']:,}",
            f"{row['tokens_cache_write']:,}",
            f"{row['tokens_out']:,}",
            _usd(row["cost_usd"]),
            str(row.get("estimated") or 0),  # calls counted from an estimate of their text (SPEC §14)
        )
    console.print(table)


def render_keys(data: dict[str, Any]) -> None:
    table = Table(title="Client keys (names or short hashes; keys are never shown)")
    for name in ("key", "budget", "spent (period)", "resets", "rpm", "tpm", "pools", "calls", "cost"):
        table.add_column(name, justify="right" if name in ("calls", "cost", "rpm", "tpm") else "left")
    for k in data["keys"]:
        budget = k.get("budget")
        state = k.get("budget_state") or {}
        table.add_row(
            escape(k["name"]),
            f"${budget['usd']:g} / {budget['per']}" if budget else "—",
            f"{_usd(state['spent_usd'])} (+{_usd(state['reserved_usd'])} held)" if state else "—",
            state.get("resets_at") or "—",
            str(k["rpm"] or "—"),
            str(k["tpm"] or "—"),
            escape(", ".join(k["pools"])) if k.get("pools") is not None else "all",
            str(k["calls"]),
            _usd(k["cost_usd"]),
        )
    if not data["keys"]:
        console.print("no client keys configured (server.api_keys): the gateway is open on its bind address")
        return
    console.print(table)
