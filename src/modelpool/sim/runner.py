"""`modelpool sim`: run a preset fleet in the foreground until cancelled."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any, TextIO

import yaml

from modelpool.sim import presets
from modelpool.sim.fleet import Fleet

MAX_LISTED = 8  # models named per provider in the human listing (the JSON and the config list them all)


def describe(fleet: Fleet) -> str:
    """One line per provider: id, kind, base URL, models (what an operator needs to point a gateway)."""
    lines = []
    width = max((len(pid) for pid in fleet.provider_ids), default=0)
    for pid in fleet.provider_ids:
        spec = fleet.provider(pid)
        models = ", ".join(m.id for m in spec.models[:MAX_LISTED])
        if len(spec.models) > MAX_LISTED:  # the scale preset's 200 a provider would bury the URLs
            models += f", … ({len(spec.models)} models)"
        extra = f"  ({len(spec.inner)} inner providers)" if spec.inner else ""
        speaks = "+".join(spec.speaks)
        lines.append(
            f"  {pid:<{width}}  {spec.kind:<9}  {speaks:<25}  {fleet.base_url(pid)}  {models}{extra}"
        )
    return "\n".join(lines)


def describe_json(fleet: Fleet, preset: str, config_out: Path | None) -> dict[str, Any]:
    providers = [
        {
            "id": pid,
            "kind": fleet.provider(pid).kind,
            "dialects": list(fleet.provider(pid).speaks),
            "base_url": fleet.base_url(pid),
            "models": [m.id for m in fleet.provider(pid).models],
        }
        for pid in fleet.provider_ids
    ]
    return {"preset": preset, "providers": providers, "config": str(config_out) if config_out else None}


def write_config(fleet: Fleet, path: Path) -> None:
    config = fleet.to_config()
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "# modelpool config for a simulated fleet (modelpool sim)\n"
    text += yaml.safe_dump(config, sort_keys=False, allow_unicode=True)
    path.write_text(text, encoding="utf-8")


async def run_sim(
    preset: str = "demo",
    host: str = "127.0.0.1",
    base_port: int | None = None,
    config_out: Path | None = None,
    *,
    out: TextIO | None = None,
    ready: asyncio.Event | None = None,
    as_json: bool = False,
) -> None:
    """Start the preset's fleet, print each provider's base URL, optionally write a modelpool YAML config
    to `config_out`, then serve until cancelled. `ready` (if given) is set once the fleet is listening."""
    out = out or sys.stdout
    fleet = Fleet(presets.preset(preset), base_port=base_port)
    await fleet.start(host)
    try:
        if config_out is not None:
            write_config(fleet, config_out)
        if as_json:  # one line, so a script can read it and leave the fleet running
            print(json.dumps(describe_json(fleet, preset, config_out), ensure_ascii=False), file=out)
        else:
            print(f"modelpool sim: preset {preset!r}, {len(fleet.provider_ids)} providers", file=out)
            print(describe(fleet), file=out)
            print("  control: POST {root}/_sim/faults, GET {root}/_sim/calls", file=out)
            if config_out is not None:
                print(f"config written to {config_out}", file=out)
        out.flush()
        if ready is not None:
            ready.set()
        await asyncio.Event().wait()
    finally:
        await fleet.stop()
