"""One process per SQLite state file: an advisory lock next to it, held while the backend is open.

Two processes on one file would each route on their own memory and overwrite each other's rows (the
last flush wins), so a quota rest found by one could be erased by the other. Sharing state between
processes is what the redis backend is for; the second process is refused with that advice.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


class StateFileInUse(RuntimeError):
    pass


class FileLock:
    def __init__(self, db_path: Path) -> None:
        self.path = Path(f"{db_path}.lock")
        self._fd: int | None = None

    def acquire(self) -> None:
        if self._fd is not None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            return  # an unwritable location: the database cannot be opened either, the backend degrades
        try:
            # flock, not fcntl locks: released by the kernel when the holder dies (even by kill -9),
            # and two opens in one process conflict too, so two in-process gateways are caught as well.
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise StateFileInUse(
                f"state file {str(self.path)[:-5]} is in use by another modelpool process (pid {holder}). "
                "Two processes on one SQLite file overwrite each other's state: give each its own "
                "`state.path`, or share state between processes with `state.backend: redis`."
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the lock
            self._fd = None
