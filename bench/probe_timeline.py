"""The timeline of each reload window from a `bench/scale.py --probe --json` file (issue #29).

    python bench/probe_timeline.py results/issue29/scale-goals.json [--min-lag-ms 2]

Per reload: the gateway loop's late wake-ups (with how much of that stretch the loop thread was running:
little means it waited for a CPU, the machine's doing), the paced build's slices over 1 ms (where each began
and stopped) and the collections over 1 ms, in time order, in ms from the config write.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import orjson


def timeline(live: dict[str, Any], min_lag: float) -> list[str]:
    probe = live["probe"]
    out: list[str] = []
    for r in live["reloads"]:
        start, end = r["window"]
        out.append(
            f"--- {r['change']}: applied +{r['applied_s'] * 1000:.0f} ms, slowest call {r['max_ms']:.1f} ms, "
            f"loop lag max {r['loop_lag_max_ms']:.1f} ms"
        )
        events: list[tuple[float, str]] = []
        for t, lag, cpu in probe["lags"]:
            if start <= t <= end and lag >= min_lag:
                stretch = lag + 0.001
                text = (
                    f"lag {lag * 1000:.1f} ms: the loop thread ran {cpu * 1000:.1f} of {stretch * 1000:.1f}"
                )
                events.append((t - stretch, text))
        for t, spent, began, stopped in probe.get("slices", []):
            if start <= t <= end:
                events.append((t, f"slice {spent * 1000:.1f} ms: {began or '(start)'} → {stopped}"))
        for t, gen, spent in probe["gcs"]:
            if start <= t <= end and spent > 0.001:
                events.append((t, f"collection g{gen} {spent * 1000:.1f} ms"))
        out += [f"  +{(t - start) * 1000:6.1f}  {text}" for t, text in sorted(events)]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", type=Path)
    ap.add_argument("--min-lag-ms", type=float, default=2.0)
    args = ap.parse_args(argv)
    doc = orjson.loads(args.json.read_bytes())
    if "probe" not in doc["live"]:
        print("no probe in this run (bench/scale.py --probe)", file=sys.stderr)
        return 1
    print("\n".join(timeline(doc["live"], args.min_lag_ms / 1000)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
