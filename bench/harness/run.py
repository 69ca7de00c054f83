"""The guard every benchmark's `main` runs its body in: Ctrl-C and expected failures become an exit code
and a one-line message, and the children and the work directory are cleaned up whatever happens."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from harness.procs import Children, cleanup_workdir

EXPECTED_ERRORS: tuple[type[BaseException], ...] = (RuntimeError, TimeoutError, OSError, KeyError, ValueError)


def interrupt_on_signals() -> None:
    """Ctrl-C and `kill` both end in `guarded_run`'s cleanup. SIGINT is reset because a shell starting a
    benchmark in the background hands it over ignored; SIGTERM is re-raised as SIGINT so the asyncio
    runner cancels the load cleanly instead of a KeyboardInterrupt surfacing inside a transport callback."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _term_as_interrupt)


def _term_as_interrupt(signum: int, frame: FrameType | None) -> None:
    signal.raise_signal(signal.SIGINT)


@dataclass
class Outcome:
    code: int | None = None  # set when the body was interrupted or failed: the process exit code


@contextmanager
def guarded_run(
    children: Children,
    workdir: Path,
    keep_logs: bool,
    what: str = "benchmark",
    errors: tuple[type[BaseException], ...] = EXPECTED_ERRORS,
) -> Iterator[Outcome]:
    outcome = Outcome()
    try:
        yield outcome
    except KeyboardInterrupt:
        print("interrupted: stopping the children", file=sys.stderr)
        outcome.code = 130
    except errors as err:
        print(f"{what} failed: {err}", file=sys.stderr)
        outcome.code = 1
    finally:
        children.stop_all()
        cleanup_workdir(workdir, keep_logs)
