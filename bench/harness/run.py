"""The guard every benchmark's `main` runs its body in: Ctrl-C and expected failures become an exit code
and a one-line message, and the children and the work directory are cleaned up whatever happens."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness.procs import Children, cleanup_workdir

EXPECTED_ERRORS: tuple[type[BaseException], ...] = (RuntimeError, TimeoutError, OSError, KeyError, ValueError)


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
