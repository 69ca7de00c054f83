"""Plain-text ranking table for `modelpool rank MODEL` (SPEC §6), rendered from `ranking_report()`.

Plain text on purpose: the same string goes to a terminal, a log or a chat reply (the seed's `/fastcel`
prints "the same table as text" outside the web client), and a report fetched from the admin API over
HTTP renders identically.
"""

from __future__ import annotations

from typing import Any

_COLUMNS = ("#", "provider", "tok/s", "TTFT", "uptime 15m", "notes")
_RIGHT = {"#", "tok/s", "TTFT", "uptime 15m"}
_NONE = "—"


def render_rank(report: dict[str, Any]) -> str:
    lines = [_headline(report)]
    rows = report.get("rows") or []
    if report.get("available") and rows:
        lines += _table(rows)
        if report.get("kind") == "openrouter" and not report.get("authenticated"):
            lines.append("(OpenRouter publishes latency and throughput only to requests with an API key.)")
    else:
        error = report.get("error") or "no endpoint stats"
        lines.append(f"Endpoint stats unavailable: {error}.")
        lines.append("Requests go out unchanged and the gateway chooses the provider.")
    if not report.get("enabled", True):
        lines.append("Gateway ranking is disabled (gateway_ranking.enabled: false): no order is injected.")
    lines.append(served_by_line(report.get("served_by")))
    return "\n".join(lines) + "\n"


def served_by_line(served: dict[str, Any] | None) -> str:
    if not served:
        return "Served by: no reply through this gateway recorded yet."
    affinity = served.get("affinity") or {}
    sentence = affinity.get("sentence") or ""
    who = served.get("provider") or "unknown provider"
    session = served.get("session")
    where = f" (session {session})" if session else ""
    return f"Served by {who}{where}. {sentence}".rstrip()


def _headline(report: dict[str, Any]) -> str:
    parts = [str(report.get("kind") or "aggregator")]
    rows = report.get("rows") or []
    if rows:
        parts.append(f"{len(rows)} providers")
    age = report.get("stats_age_s")
    if age is not None:
        parts.append(f"stats {_age(age)} old" + (", refreshing" if report.get("refreshing") else ""))
    return f"{report.get('model', '?')} · " + " · ".join(parts)


def _table(rows: list[dict[str, Any]]) -> list[str]:
    cells = [
        (
            str(i),
            str(row.get("provider", "")),
            _tps(row.get("tps")),
            _ms(row.get("ttft_ms")),
            _pct(row.get("uptime_15m")),
            str(row.get("notes") or ""),
        )
        for i, row in enumerate(rows, 1)
    ]
    widths = [max(len(col), *(len(c[i]) for c in cells)) for i, col in enumerate(_COLUMNS)]

    def fmt(values: tuple[str, ...]) -> str:
        out = [
            v.rjust(w) if col in _RIGHT else v.ljust(w)
            for v, w, col in zip(values, widths, _COLUMNS, strict=True)
        ]
        return "  ".join(out).rstrip()

    return [fmt(_COLUMNS), *(fmt(c) for c in cells)]


def _tps(value: Any) -> str:
    return _NONE if value is None else f"{value:.0f}"


def _ms(value: Any) -> str:
    return _NONE if value is None else f"{value:.0f} ms"


def _pct(value: Any) -> str:
    return _NONE if value is None else f"{value:g}%"


def _age(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
