"""The large bad-input run of issue #10: property-based fuzzing of the three client endpoints (hypothesis)
and schemathesis against the admin API's OpenAPI document, ≥ 10,000 generated inputs in all, zero 5xx.

    python bench/fuzz.py                          # 2,000 bodies per client endpoint + 200 per admin operation
    python bench/fuzz.py --client 200 --admin 20  # a quick check
    python bench/fuzz.py --markdown

Part 1 runs the suite's own fuzz test (tests/faults/test_bad_input.py::test_random_json_never_gets_a_5xx:
random JSON, near-valid bodies and wrong types to /v1/chat/completions, /v1/messages, /v1/responses on a
real gateway over the simulated fleet) with `MODELPOOL_FUZZ_EXAMPLES` raised, and counts the examples
hypothesis reports. Part 2 starts `modelpool sim --preset bench` and `modelpool serve` as processes and
runs the `schemathesis` CLI on `/admin/openapi.json` (every operation but the never-ending `/admin/events`
stream; positive and negative data; check `not_a_server_error`), counting the test cases from its NDJSON
report. The gateway's log is scanned for tracebacks afterwards: a crash that still answered 4xx counts.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from harness import procs
from harness.report import command_line, machine_info, machine_lines, md_table, now_utc, plain_table
from harness.run import guarded_run, interrupt_on_signals

REPO = Path(__file__).resolve().parents[1]
CLIENT_TEST = "tests/faults/test_bad_input.py::test_random_json_never_gets_a_5xx"
_STATS = re.compile(r"(\d+) passing examples?, (\d+) failing examples?, (\d+) invalid examples?")


def run_client_fuzz(url: str, examples: int) -> dict[str, Any]:
    """The suite's own body strategy (tests/faults/test_bad_input.py) against the CLI gateway, counted."""
    import httpx
    from hypothesis import HealthCheck, given, settings

    sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "faults")]
    from test_bad_input import ALL, bodies, check_error_shape  # type: ignore[import-not-found]

    counts = {"inputs": 0, "failing": 0}
    failures: list[str] = []
    headers = {"content-type": "application/json", "authorization": f"Bearer {procs.CLIENT_KEY}"}
    t0 = time.monotonic()
    with httpx.Client(base_url=url, timeout=30, headers=headers) as client:

        def fuzz_one(path: str) -> None:
            @settings(
                max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck)
            )
            @given(body=bodies)
            def fuzz(body: Any) -> None:
                counts["inputs"] += 1
                resp = client.post(path, content=orjson.dumps(body))
                try:
                    assert resp.status_code < 500, resp.status_code
                    if resp.status_code >= 400:
                        check_error_shape(resp.json(), path)
                except (AssertionError, ValueError, KeyError) as exc:
                    counts["failing"] += 1
                    failures.append(f"{path} {body!r:.200} → {resp.status_code} {resp.text[:200]} ({exc})")
                    raise

            fuzz()

        for path in ALL:
            try:
                fuzz_one(path)
            except Exception as exc:  # hypothesis re-raises the shrunk failure; go on with the next path
                failures.append(f"{path}: {type(exc).__name__}: {str(exc)[:300]}")
    return {
        **counts,
        "endpoints": len(ALL),
        "passed": not failures,
        "seconds": round(time.monotonic() - t0, 1),
        "tail": "\n".join(failures[:10]),
    }


def run_admin_fuzz(gateway: procs.Child, examples: int, seed: int, workdir: Path) -> dict[str, Any]:
    report = workdir / "schemathesis.ndjson"
    exe = shutil.which("schemathesis") or shutil.which("st")
    if exe is None:
        raise RuntimeError("schemathesis is not installed: pip install 'schemathesis>=4'")
    cmd = [
        exe, "run", f"{gateway.url}/admin/openapi.json",
        "--header", f"Authorization: Bearer {procs.ADMIN_TOKEN}",
        "--checks", "not_a_server_error",
        "--max-examples", str(examples),
        "--exclude-path", "/admin/events",
        "--seed", str(seed),
        "--request-timeout", "30",
        "--continue-on-failure",
        "--report", "ndjson", "--report-ndjson-path", str(report),
    ]  # fmt: skip
    t0 = time.monotonic()
    res = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"})
    seconds = round(time.monotonic() - t0, 1)
    alive = gateway.alive()
    log_errors = procs.log_errors(gateway)
    cases, failures = count_cases(report)
    return {
        "inputs": cases,
        "failing": failures,
        "passed": res.returncode == 0 and failures == 0 and alive and log_errors == 0,
        "gateway_alive": alive,
        "gateway_log_errors": log_errors,
        "seconds": seconds,
        "tail": "\n".join(res.stdout.splitlines()[-40:]),
    }


def count_cases(report: Path) -> tuple[int, int]:
    """Test cases sent and failed checks, from schemathesis' NDJSON event log (one event per line)."""
    cases = failures = 0
    if not report.exists():
        return 0, 0
    for line in report.read_text().splitlines():
        event = orjson.loads(line)
        for name, body in event.items():
            if name != "ScenarioFinished":
                continue
            recorder = body.get("recorder") or {}
            cases += len(recorder.get("cases") or {})
            for checks in (recorder.get("checks") or {}).values():
                failures += sum(1 for c in checks if c.get("status") == "FAILURE")
    return cases, failures


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--client", type=int, default=2000, help="examples per client endpoint (4 endpoints)")
    ap.add_argument("--admin", type=int, default=200, help="schemathesis examples per admin operation")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--keep-logs", action="store_true")
    args = ap.parse_args(argv)
    interrupt_on_signals()
    doc: dict[str, Any] = {"date": now_utc(), "command": command_line(), "machine": machine_info()}
    workdir = Path(tempfile.mkdtemp(prefix="modelpool-fuzz-"))
    children = procs.Children(workdir)
    fuzz_errors = (RuntimeError, TimeoutError, OSError)
    with guarded_run(children, workdir, args.keep_logs, "fuzz run", errors=fuzz_errors) as run:
        _sim, sim_config = procs.start_sim(children)
        overrides = {
            "holidays": {"source": "bundled"}
        }  # the fuzzer may switch holidays.sync on: stay offline
        gateway = procs.start_gateway(children, sim_config, "priority", overrides=overrides)
        print(f"client endpoints: {args.client} examples × 4 …", flush=True)
        doc["client"] = run_client_fuzz(gateway.url, args.client)
        print(f"admin API: schemathesis, {args.admin} examples per operation …", flush=True)
        doc["admin"] = run_admin_fuzz(gateway, args.admin, args.seed, workdir)
    if run.code is not None:
        return run.code
    doc["machine"]["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    doc["total_inputs"] = doc["client"]["inputs"] + doc["admin"]["inputs"]
    doc["passed"] = doc["client"]["passed"] and doc["admin"]["passed"]
    report(doc, args.markdown)
    if args.json:
        args.json.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    return 0 if doc["passed"] else 1


def _rows(doc: dict[str, Any]) -> list[list[str]]:
    rows = []
    for name, label in (("client", "client endpoints (hypothesis)"), ("admin", "admin API (schemathesis)")):
        part = doc[name]
        verdict = "PASS" if part["passed"] else "FAIL"
        rows.append([label, f"{part['inputs']:,}", str(part["failing"]), f"{part['seconds']:.0f}", verdict])
    rows.append(["total", f"{doc['total_inputs']:,}", "", "", "PASS" if doc["passed"] else "FAIL"])
    return rows


HEAD = ["part", "inputs", "5xx / failures", "seconds", "verdict"]


def report(doc: dict[str, Any], markdown: bool) -> None:
    print(plain_table(HEAD, _rows(doc)))
    for name in ("client", "admin"):
        if not doc[name]["passed"]:
            print(f"--- {name} output ---\n{doc[name]['tail']}")
    if markdown:
        print()
        print(f"### Fuzz — {doc['date']}\n\n- command: `{doc['command']}`")
        print("\n".join(machine_lines(doc)))
        print()
        print(md_table(HEAD, _rows(doc)))
        a = doc["admin"]
        print(f"\n- admin gateway alive after the run: {a['gateway_alive']}; tracebacks in its log: "
              f"{a['gateway_log_errors']}")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
