"""Issue #21: the dashboard's Models roster at 906 rows (the rotator seed's live scan) in real Chromium.

    flock /tmp/bench.lock python bench/dashboard_roster.py            # 3 runs (~30 s)
    python bench/dashboard_roster.py --runs 1                         # self-check
    python bench/dashboard_roster.py --gateway-pythonpath /tmp/base/src   # serve another tree (A/B)

The real `modelpool serve` runs in front of `modelpool sim --preset roster` (12 chat channels with 453
models between them and a `-vision` twin of each), with no `models:` lists in its config: the catalog is
discovered from the providers' model lists, as a user's would be. Then, in Debian's Chromium through
Playwright, per run (a fresh page, logged in by the admin cookie):

- **render**: navigation start → every one of the 906 rows in the roster and the next frame painted
  (`performance.now()` in the page, whose origin is the navigation start); the `/admin/models` fetch's
  own share (Resource Timing) is reported beside it;
- **fold / unfold**: a click on each fold control (collapse all, expand all — every row shown —, the chat
  and vision sections, one 80-row channel) → the next frame painted, again timed in the page, with the
  script, style and layout time Chromium's Performance domain counted for it;
- **API**: `GET /admin/models` from Python, wall time and payload bytes (median of `--api-calls`).

Each figure is the median over `--runs`; the goal rows hold them against issue #21's bound (≤ 1 s).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import orjson

from harness import procs
from harness.goals import Goal, check, goals_table
from harness.report import command_line, machine_info, machine_lines, md_table, now_utc, plain_table
from harness.run import guarded_run, interrupt_on_signals

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"]
ROWS = 906
BOUND_S = 1.0
COOKIE = "modelpool_admin"
# The fold controls, in the order they are pressed: each leaves the roster as the next one expects
# (collapse all, expand all, then each level folded and unfolded again).
FOLDS: list[tuple[str, str]] = [
    ("collapse all", "#collapse-all"),
    ("expand all (906 rows shown)", "#expand-all"),
    ("fold the vision section (453 rows)", '[data-fold="section:vision"]'),
    ("unfold the vision section", '[data-fold="section:vision"]'),
    ("fold the chat section (453 rows)", '[data-fold="section:chat"]'),
    ("unfold the chat section", '[data-fold="section:chat"]'),
    ("fold one channel (openrouter, 80 rows)", '[data-fold="channel:openrouter"]'),
    ("unfold one channel", '[data-fold="channel:openrouter"]'),
]
# In the page: wait (frame by frame) until the roster holds `n` rows, then for the frame that shows them.
RENDERED_JS = """async (n) => {
  const frame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  while (document.querySelectorAll('#roster-root .row').length < n) await frame();
  await frame();
  const done = performance.now();
  const api = performance.getEntriesByType('resource').find((e) => e.name.endsWith('/admin/models'));
  const rows = document.querySelectorAll('#roster-root .row').length;
  return { done, apiStart: api ? api.startTime : null, apiEnd: api ? api.responseEnd : null, rows };
}"""
# Click one control and wait for the next painted frame: the handler, style, layout and paint it caused.
CLICK_JS = """async (selector) => {
  const el = document.querySelector(selector);
  if (!el) throw new Error('no element ' + selector);
  const t0 = performance.now();
  el.click();
  await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  return performance.now() - t0;
}"""
VISIBLE_ROWS_JS = (
    "() => [...document.querySelectorAll('#roster-root .row')].filter((r) => r.checkVisibility()).length"
)
CDP_METRICS = ("ScriptDuration", "RecalcStyleDuration", "LayoutDuration", "TaskDuration")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3, help="fresh pages (median over them)")
    ap.add_argument("--api-calls", type=int, default=9, help="GET /admin/models calls timed from Python")
    ap.add_argument("--gateway-pythonpath", help="PYTHONPATH of the served gateway (A/B another tree)")
    ap.add_argument("--label", default="", help="names this run in the output (e.g. before / after)")
    ap.add_argument("--trace", type=Path, help="write a Chromium performance trace of the first run here")
    ap.add_argument("--json", type=Path, help="write the full results here")
    ap.add_argument("--markdown", action="store_true", help="print a block ready for bench/RESULTS.md")
    ap.add_argument("--keep-logs", action="store_true", help="keep the children's logs (printed path)")
    return ap.parse_args(argv)


def start_servers(children: procs.Children, pythonpath: str | None) -> procs.Child:
    _, sim_config = procs.start_sim(children, "roster")
    for provider in sim_config["providers"]:  # discovery: the catalog comes from the providers' lists
        provider.pop("models", None)
        provider.pop("model_info", None)
    env = {"PYTHONPATH": pythonpath} if pythonpath else None
    return procs.start_gateway(children, sim_config, "priority", env=env)


def time_api(url: str, calls: int) -> dict[str, Any]:
    req = urllib.request.Request(
        url + "/admin/models", headers={"authorization": f"Bearer {procs.ADMIN_TOKEN}"}
    )
    times, size, rows = [], 0, 0
    for _ in range(calls + 1):
        t0 = time.perf_counter()
        with urllib.request.urlopen(req, timeout=30) as resp:
            body = resp.read()
        times.append((time.perf_counter() - t0) * 1000)
        size, rows = len(body), len(orjson.loads(body)["models"])
    times = times[1:]  # the first call warms the health snapshots and the interpreter's caches
    return {"median_ms": statistics.median(times), "max_ms": max(times), "bytes": size, "rows": rows}


def browser_runs(url: str, runs: int, trace: Path | None) -> list[dict[str, Any]]:
    from playwright.sync_api import sync_playwright

    out = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for i in range(runs + 1):  # run 0 warms Chromium's caches (module parse, fonts): not counted
                context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
                context.add_cookies(
                    [{"name": COOKIE, "value": procs.ADMIN_TOKEN, "url": url, "httpOnly": True}]
                )
                page = context.new_page()
                if trace is not None and i == 1:
                    browser.start_tracing(page=page, path=str(trace), screenshots=False)
                try:
                    result = one_run(page, url)
                finally:
                    if trace is not None and i == 1:
                        browser.stop_tracing()
                    context.close()
                if i:
                    out.append(result)
        finally:
            browser.close()
    return out


def one_run(page: Any, url: str) -> dict[str, Any]:
    cdp = page.context.new_cdp_session(page)
    cdp.send("Performance.enable")
    page.goto(url + "/#/models", wait_until="commit")
    shown = page.evaluate(RENDERED_JS, ROWS)
    if shown["rows"] != ROWS:
        raise RuntimeError(f"the roster shows {shown['rows']} rows, not {ROWS}")
    run: dict[str, Any] = {
        "render_ms": shown["done"],
        "api_in_page_ms": (shown["apiEnd"] - shown["apiStart"]) if shown["apiEnd"] else None,
        "after_api_ms": (shown["done"] - shown["apiEnd"]) if shown["apiEnd"] else None,
        "folds": {},
    }
    for name, selector in FOLDS:
        before = _metrics(cdp)
        ms = page.evaluate(CLICK_JS, selector)
        after = _metrics(cdp)
        cost = {k: (after[k] - before[k]) * 1000 for k in CDP_METRICS}
        run["folds"][name] = {"ms": ms, **cost, "visible_rows": page.evaluate(VISIBLE_ROWS_JS)}
    run["refresh"] = time_refresh(page, cdp, url)
    return run


def time_refresh(page: Any, cdp: Any, url: str) -> dict[str, float]:
    """One call through the gateway changes one row's counters; the page hears of it (the `served` event,
    or its 5 s poll), fetches the roster again and redraws: the main-thread cost of that redraw."""
    model = page.locator("#roster-root .section[data-section=chat] .row .model").first.inner_text()
    before = _metrics(cdp)
    t0 = time.perf_counter()
    served = call_gateway(url, model)
    (row,) = [r for r in http_roster(url)["models"] if r["key"] == served]
    page.wait_for_function(
        '([key, text]) => { const d = document.querySelector(`.row[data-route="${key}"] .detail`);'
        " return d !== null && d.textContent.endsWith(text); }",
        arg=[served, f"· {row['successes']}/{row['attempts']}"],
        timeout=15_000,
    )
    wall = (time.perf_counter() - t0) * 1000
    after = _metrics(cdp)
    return {"ms": wall, **{k: (after[k] - before[k]) * 1000 for k in CDP_METRICS}}


def http_roster(url: str) -> Any:
    return procs.http_json(url + "/admin/models", token=procs.ADMIN_TOKEN)


def call_gateway(url: str, model: str) -> str:
    """One non-streamed call for `model` with the bench client key; returns the route that served it."""
    body = orjson.dumps({"model": model, "messages": [{"role": "user", "content": "hello"}]})
    headers = {"authorization": f"Bearer {procs.CLIENT_KEY}", "content-type": "application/json"}
    req = urllib.request.Request(url + "/v1/chat/completions", data=body, headers=headers, method="POST")
    with urllib.request.urlopen(req, timeout=30) as resp:
        return str(resp.headers.get("x-modelpool-route", ""))


def _metrics(cdp: Any) -> dict[str, float]:
    got = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    return {k: float(got.get(k, 0.0)) for k in CDP_METRICS}


def median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    folds = {
        name: {k: median([r["folds"][name][k] for r in runs]) for k in ("ms", *CDP_METRICS, "visible_rows")}
        for name, _ in FOLDS
    }
    return {
        "render_ms": median([r["render_ms"] for r in runs]),
        "api_in_page_ms": median([r["api_in_page_ms"] for r in runs]),
        "after_api_ms": median([r["after_api_ms"] for r in runs]),
        "folds": folds,
        "refresh": {k: median([r["refresh"][k] for r in runs]) for k in ("ms", *CDP_METRICS)},
    }


def goals(doc: dict[str, Any]) -> list[Goal]:
    s = doc["summary"]
    worst = max(s["folds"].items(), key=lambda kv: kv[1]["ms"] or 0.0)
    return [
        check(
            f"roster of {ROWS} rows: navigation → rendered (median)",
            s["render_ms"] / 1000,
            BOUND_S,
            " s",
            note=f"/admin/models fetch {s['api_in_page_ms']:.0f} ms of it",
        ),
        check(
            "roster fold / unfold: slowest control → next frame (median)",
            (worst[1]["ms"] or 0.0) / 1000,
            BOUND_S,
            " s",
            note=worst[0],
        ),
        check("GET /admin/models (906 rows, median)", doc["api"]["median_ms"] / 1000, BOUND_S, " s",
              note=f"{doc['api']['bytes'] / 1024:.0f} KiB"),
    ]  # fmt: skip


def tables(doc: dict[str, Any], md: bool) -> tuple[str, str]:
    s = doc["summary"]
    head = ["measure", "median ms", "main thread ms", "script ms", "style ms", "layout ms", "visible rows"]
    blank = ["", "", "", "", ""]
    rows = [["navigation → 906 rows rendered", f"{s['render_ms']:.0f}", *blank]]
    rows.append(["  of which /admin/models fetch (in page)", f"{s['api_in_page_ms']:.0f}", *blank])
    rows.append(["  of which fetch end → painted", f"{s['after_api_ms']:.0f}", *blank])
    for name, f in s["folds"].items():
        rows.append([name, f"{f['ms']:.0f}", *_costs(f), f"{f['visible_rows']:.0f}"])
    rows.append(["refresh after one served call (call → row redrawn)", f"{s['refresh']['ms']:.0f}",
                 *_costs(s["refresh"]), ""])  # fmt: skip
    api = doc["api"]
    rows.append(
        [f"GET /admin/models from Python ({api['bytes']:,} bytes)", f"{api['median_ms']:.1f}", *blank]
    )
    table = md_table(head, rows) if md else plain_table(head, rows)
    return table, goals_table(goals(doc), md=md)


def _costs(f: dict[str, float]) -> list[str]:
    """Chromium's own count of the main thread's busy, script, style and layout time for one measure."""
    return [
        f"{f[k]:.0f}" for k in ("TaskDuration", "ScriptDuration", "RecalcStyleDuration", "LayoutDuration")
    ]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    interrupt_on_signals()
    workdir = Path(tempfile.mkdtemp(prefix="modelpool-roster-"))
    children = procs.Children(workdir)
    doc: dict[str, Any] = {"date": now_utc(), "command": command_line(), "machine": machine_info()}
    doc["label"] = args.label
    doc["gateway_pythonpath"] = args.gateway_pythonpath
    with guarded_run(children, workdir, args.keep_logs, "roster benchmark") as outcome:
        gateway = start_servers(children, args.gateway_pythonpath)
        doc["api"] = time_api(gateway.url, args.api_calls)
        if doc["api"]["rows"] != ROWS:
            raise RuntimeError(f"/admin/models lists {doc['api']['rows']} rows, not {ROWS}")
        doc["runs"] = browser_runs(gateway.url, args.runs, args.trace)
    if outcome.code is not None:
        return outcome.code
    doc["machine"]["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    doc["summary"] = summarize(doc["runs"])
    doc["goals"] = [g.to_dict() for g in goals(doc)]
    _print(doc, args)
    return 0


def _print(doc: dict[str, Any], args: argparse.Namespace) -> None:
    label = f" [{doc['label']}]" if doc["label"] else ""
    table, goal_rows = tables(doc, md=False)
    print(f"Models roster, {ROWS} rows, median of {len(doc['runs'])} runs{label}\n{table}\n\n{goal_rows}")
    if args.trace:
        print(f"\ntrace of run 1 written to {args.trace} (open in chrome://tracing or Perfetto)")
    if args.json:
        args.json.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
        print(f"\nJSON written to {args.json}")
    if args.markdown:
        table, goal_rows = tables(doc, md=True)
        lines = [f"### dashboard roster{label} — {doc['date']}", "", f"- command: `{doc['command']}`"]
        lines += machine_lines(doc)
        print("\n" + "\n".join(lines) + "\n\n" + table + "\n\n" + goal_rows)


if __name__ == "__main__":
    sys.exit(main())
