"""`python -m modelpool.sim [preset] [--host H] [--base-port P] [--config-out F]`."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from pathlib import Path

from modelpool.sim.fleet import new_event_loop
from modelpool.sim.presets import PRESETS
from modelpool.sim.runner import run_sim


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m modelpool.sim", description="Run a simulated provider fleet."
    )
    parser.add_argument("preset", nargs="?", default="demo", choices=sorted(PRESETS))
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--base-port", type=int, default=None)
    parser.add_argument("--config-out", type=Path, default=None)
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt), asyncio.Runner(loop_factory=new_event_loop) as runner:
        runner.run(run_sim(args.preset, args.host, args.base_port, args.config_out))


if __name__ == "__main__":
    main()
