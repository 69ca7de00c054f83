"""Rendering: the machine a run happened on, the human table, the JSON document, the markdown block."""

from __future__ import annotations

import datetime as dt
import math
import os
import platform
import shlex
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from harness.stats import Delta, Summary

_REPO = Path(__file__).resolve().parents[2]


def machine_info() -> dict[str, Any]:
    """Enough to tell two runs' machines apart: figures are only comparable within one run anyway."""
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        usable = os.cpu_count() or 0
    return {
        "nproc": usable,
        "cpu_model": cpu,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
        "modelpool": _version("modelpool"),
        "aiohttp": _version("aiohttp"),
        "uvicorn": _version("uvicorn"),
        "uvloop": _version("uvloop"),
        "git": _git_revision(),
    }


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _git_revision() -> str:
    """Commit plus `-dirty`: the gateway under test may be an uncommitted working tree."""
    try:
        out = subprocess.run(
            ["git", "-C", str(_REPO), "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return out.stdout.strip() or "?"


def command_line() -> str:
    return shlex.join(["python", *sys.argv])


def now_utc() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


# ---- human table --------------------------------------------------------------------------------------


def _f(x: float | None, digits: int = 2) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _signed(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:+.2f}"


def scenario_table(title: str, summaries: dict[str, Summary], found: list[Delta], md: bool = False) -> str:
    """One scenario: a row per target (whole calls, then TTFT when streaming), then the added latency."""
    stream = any(s.ttft is not None for s in summaries.values())
    head = ["target", "ok", "err", "req/s", "p50 ms", "p90 ms", "p99 ms", "mean ms"]
    if stream:
        head += ["TTFT p50", "TTFT p90", "TTFT p99"]
    head += ["proxy CPU ms/call", "sim CPU ms/call", "client CPU ms/call", "TCP opens/call"]
    if stream:
        head += ["chunks/call", "proxy CPU µs/chunk"]
    head.append("proxy RSS MB peak")
    rows: list[list[str]] = []
    for s in summaries.values():
        row = [s.target, str(s.calls), str(s.errors), _f(s.rps, 0)]
        row += [_f(s.total.p50), _f(s.total.p90), _f(s.total.p99), _f(s.total.mean)]
        if stream:
            t = s.ttft
            row += [_f(t.p50), _f(t.p90), _f(t.p99)] if t else ["-"] * 3
        row += [_f(s.server_cpu_ms_per_call, 3), _f(s.upstream_cpu_ms_per_call, 3)]
        row.append(_f(s.client_cpu_ms_per_call, 3))
        row.append(_f(s.tcp_opens_per_call, 3))
        if stream:
            row += [_f(s.chunks_per_call, 1), _f(s.server_cpu_us_per_chunk, 2)]
        row.append(_f(s.rss_mb_peak, 1))
        rows.append(row)
    added_head = ["added vs direct", "metric", "p50 ms", "p90 ms", "p99 ms", "mean ms", "p50 ×", "p99 ×"]
    added = [[d.target, d.metric, *_added_cells(d)] for d in found]
    if md:
        return f"**{title}**\n\n{_md(head, rows)}\n\n{_md(added_head, added)}" if added else _md(head, rows)
    out = [title, _plain(head, rows)]
    if added:
        out.append(_plain(added_head, added))
    for s in summaries.values():
        if s.errors:
            out.append(f"  {s.target} errors: " + " | ".join(s.error_samples))
        if len(s.routes) > 1:
            out.append(f"  {s.target} routes: {s.routes}")
    return "\n".join(out)


def _added_cells(d: Delta) -> list[str]:
    return [*map(_signed, (d.p50_ms, d.p90_ms, d.p99_ms, d.mean_ms)), _f(d.p50_ratio), _f(d.p99_ratio)]


def _plain(head: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = []
    for r in [head, *rows]:
        cells = [c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))]
        lines.append("  " + "  ".join(cells))
    return "\n".join(lines)


def plain_table(head: list[str], rows: list[list[str]]) -> str:
    """A left/right-aligned text table (first column left), as the scripts print it."""
    return _plain(head, rows)


def md_table(head: list[str], rows: list[list[str]]) -> str:
    """The same table in markdown, numeric columns right-aligned."""
    return _md(head, rows)


def _md(head: list[str], rows: list[list[str]]) -> str:
    lines = [
        "| " + " | ".join(head) + " |",
        "|" + "|".join("---" if i == 0 else "--:" for i in range(len(head))) + "|",
    ]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


# ---- markdown block for RESULTS.md ---------------------------------------------------------------------


def _loads(values: list[float] | None) -> str:
    return " / ".join(str(x) for x in values) if values else "?"


def machine_lines(doc: dict[str, Any]) -> list[str]:
    """The `- machine:` and `- software:` lines of a RESULTS.md block."""
    m = doc["machine"]
    return [
        f"- machine: {m['nproc']} CPUs ({m['cpu_model']}), {m['platform']}, load average "
        f"{_loads(m.get('loadavg_at_start'))} at start, {_loads(m.get('loadavg_at_end'))} at end",
        f"- software: Python {m['python']}, modelpool {m['modelpool']} (git {m['git']}), "
        f"aiohttp {m['aiohttp']}, uvicorn {m['uvicorn']}, uvloop {m['uvloop']}",
    ]


def markdown_block(doc: dict[str, Any], tables: list[str]) -> str:
    m = doc["machine"]
    s = doc["settings"]
    lines = [
        f"### overhead — {doc['date']}",
        "",
        f"- command: `{doc['command']}`",
        f"- machine: {m['nproc']} CPUs ({m['cpu_model']}), {m['platform']}, load average "
        f"{_loads(m.get('loadavg_at_start'))} at start, {_loads(m.get('loadavg_at_end'))} at end",
        f"- software: Python {m['python']}, modelpool {m['modelpool']} (git {m['git']}), "
        f"aiohttp {m['aiohttp']}, uvicorn {m['uvicorn']}, uvloop {m['uvloop']}"
        + (f", LiteLLM {doc['litellm']['version']}" if doc.get("litellm", {}).get("version") else ""),
        f"- workload: model `{s['model']}`, upstream `{s['upstream']}` of "
        f"`modelpool sim --preset {s.get('preset', 'bench')}` (fast mode), gateway strategy "
        f"`{s['strategy']}`, {s['requests']} measured calls per target per scenario after "
        f"{s['warmup']} warm-up, targets alternated in blocks of {s['block']}",
        "",
    ]
    for t in tables:
        lines += [t, ""]
    for name, ratios in doc.get("comparisons", {}).items():
        if ratios:
            pretty = ", ".join(f"{k} = {_f(v)}" for k, v in ratios.items())
            lines.append(f"- {name}: {pretty}")
    return "\n".join(lines).rstrip() + "\n"
