"""Live reload of `modelpool.yaml` (SPEC §1.5): a valid edit applies, an invalid one is reported and
the last good config stays in force.

The watch is on the file's *directory*: editors save by writing a temp file and renaming it over the
original, which replaces the inode a file-level watch would be attached to.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import inspect
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import watchfiles

from modelpool.config.errors import ConfigError
from modelpool.config.loader import LoadedConfig, load_config
from modelpool.offloop import build_off_loop

log = logging.getLogger("modelpool.config")

REMOVED_MESSAGE = "config: config file removed; keeping last good config"
OnChange = Callable[[LoadedConfig], Awaitable[None] | None]
OnError = Callable[[ConfigError], Awaitable[None] | None]


class ConfigWatcher:
    """Watches one config file and reports each settled change as a new config or an error."""

    def __init__(
        self,
        path: Path,
        on_change: OnChange,
        on_error: OnError,
        env: Mapping[str, str] | None = None,
        debounce_ms: int = 100,
        *,
        initial: LoadedConfig | None = None,
        force_polling: bool | None = None,
    ) -> None:
        self.path = Path(path).absolute()
        self._on_change = on_change
        self._on_error = on_error
        self._env = env  # None: read os.environ at each reload, so a changed variable is picked up
        self._debounce_ms = debounce_ms
        self._force_polling = force_polling  # for network or container mounts where inotify is blind
        self.last_good: LoadedConfig | None = initial
        self.last_error: ConfigError | None = None
        self._digest: bytes | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()  # start() and the watch task may both see a change: one at a time

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def start(self) -> None:
        if self.running:
            return
        if not self.path.parent.is_dir():
            raise ConfigError(
                f"config: cannot watch {self.path}: its directory does not exist", path=self.path
            )
        self._stop = asyncio.Event()
        self._digest = self._read_digest()
        self._task = asyncio.create_task(self._run(), name=f"config-watch:{self.path.name}")
        # One turn of the loop lets the task create the OS watch (synchronously, before its first
        # await), so a write right after start() returns is seen.
        await asyncio.sleep(0)
        if self._read_digest() != self._digest:  # written while the watch was being set up
            await self._changed()

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        self._stop.set()
        try:
            # The watch thread polls the stop event every `step` (50 ms); cancel if it is slow.
            await asyncio.wait_for(asyncio.shield(task), timeout=2.0)
        except TimeoutError:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def reload(self) -> LoadedConfig | None:
        """Load the file now and report the result; returns the new config, or None when rejected."""
        if not self.path.is_file():
            await self._report_error(ConfigError(REMOVED_MESSAGE, path=self.path))
            return None
        try:
            # In slices between the calls' steps (offloop.py): a 10,000-route file takes ~40 ms to read.
            loaded = await build_off_loop(lambda path: load_config(path, self._env), self.path)
        except ConfigError as err:
            await self._report_error(err)
            return None
        except Exception as exc:  # a watcher must survive anything a bad file can provoke
            await self._report_error(
                ConfigError(f"config: unexpected error loading: {exc!r}", path=self.path)
            )
            return None
        self.last_good, self.last_error = loaded, None
        await self._call(self._on_change, loaded)
        return loaded

    async def _run(self) -> None:
        target = self.path

        def only_target(_change: watchfiles.Change, changed: str) -> bool:
            return os.path.basename(changed) == target.name and _same_dir(changed, target)

        watch = watchfiles.awatch(
            target.parent,
            watch_filter=only_target,
            debounce=self._debounce_ms,
            stop_event=self._stop,
            recursive=False,
            force_polling=self._force_polling,
        )
        try:
            async for _changes in watch:
                await self._changed()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("config watcher for %s stopped", target)

    async def _changed(self) -> None:
        async with self._lock:
            digest = self._read_digest()
            if digest == self._digest and (digest is not None or self.last_error is not None):
                return  # same bytes (a touch) or still absent: nothing new to apply or report
            self._digest = digest
            await self.reload()

    def _read_digest(self) -> bytes | None:
        try:
            return hashlib.sha256(self.path.read_bytes()).digest()
        except OSError:
            return None

    async def _report_error(self, err: ConfigError) -> None:
        self.last_error = err
        log.warning("%s", err)
        await self._call(self._on_error, err)

    @staticmethod
    async def _call(callback: Callable[[Any], Awaitable[None] | None], arg: Any) -> None:
        try:
            result = callback(arg)
            if inspect.isawaitable(result):
                await result
        except Exception:
            # A failing subscriber must not stop the watch; later edits still need to apply.
            log.exception("config watcher callback failed")


def _same_dir(changed: str, target: Path) -> bool:
    try:
        return os.path.samefile(os.path.dirname(changed), target.parent)
    except OSError:
        return False
