"""Live reload: real files, real watcher, bounded waits (no timing assertions)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from modelpool.config import ConfigError, ConfigWatcher, LoadedConfig, load_config
from modelpool.config.watch import REMOVED_MESSAGE

WAIT = 15.0  # generous: only bounds a hang, never measures speed


class Events:
    def __init__(self) -> None:
        self.queue: asyncio.Queue[LoadedConfig | ConfigError] = asyncio.Queue()

    async def on_change(self, loaded: LoadedConfig) -> None:
        await self.queue.put(loaded)

    def on_error(self, err: ConfigError) -> None:  # sync callbacks are accepted too
        self.queue.put_nowait(err)

    async def next(self) -> LoadedConfig | ConfigError:
        return await asyncio.wait_for(self.queue.get(), timeout=WAIT)


def write_atomically(path: Path, text: str) -> None:
    """As editors save: a temp file renamed over the original."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "modelpool.yaml"
    path.write_text("pool: {strategy: fastest}\n", encoding="utf-8")
    return path


@pytest.fixture
async def watched(config_file: Path) -> AsyncIterator[tuple[ConfigWatcher, Events]]:
    events = Events()
    initial = load_config(config_file, env={})
    watcher = ConfigWatcher(config_file, events.on_change, events.on_error, env={}, initial=initial)
    await watcher.start()
    try:
        yield watcher, events
    finally:
        await watcher.stop()


async def test_valid_edit_applies(watched: tuple[ConfigWatcher, Events], config_file: Path) -> None:
    watcher, events = watched
    write_atomically(config_file, "pool: {strategy: priority}\n")
    got = await events.next()
    assert isinstance(got, LoadedConfig)
    assert got.config.pool.strategy == "priority"
    assert watcher.last_good is got and watcher.last_error is None


async def test_in_place_write_applies(watched: tuple[ConfigWatcher, Events], config_file: Path) -> None:
    _, events = watched
    config_file.write_text("pool: {strategy: cheapest}\n", encoding="utf-8")
    got = await events.next()
    assert isinstance(got, LoadedConfig) and got.config.pool.strategy == "cheapest"


async def test_invalid_edit_rejected_and_last_good_kept(
    watched: tuple[ConfigWatcher, Events], config_file: Path
) -> None:
    watcher, events = watched
    good = watcher.last_good
    write_atomically(config_file, "pool: {strategy: warp-speed, max_attempts: 99}\n")
    err = await events.next()
    assert isinstance(err, ConfigError)
    assert sorted(line.split(":")[0] for line in err.errors) == ["pool.max_attempts", "pool.strategy"]
    assert watcher.last_error is err
    assert watcher.last_good is good and good is not None
    assert good.config.pool.strategy == "fastest"

    write_atomically(config_file, "pool: {strategy: score}\n")
    fixed = await events.next()
    assert isinstance(fixed, LoadedConfig) and fixed.config.pool.strategy == "score"
    assert watcher.last_error is None


async def test_yaml_syntax_error_reported(watched: tuple[ConfigWatcher, Events], config_file: Path) -> None:
    _, events = watched
    write_atomically(config_file, "pool: {strategy: [\n")
    err = await events.next()
    assert isinstance(err, ConfigError) and err.errors[0].startswith("line ")


async def test_file_removed_then_restored(watched: tuple[ConfigWatcher, Events], config_file: Path) -> None:
    watcher, events = watched
    config_file.unlink()
    err = await events.next()
    assert isinstance(err, ConfigError) and err.errors == [REMOVED_MESSAGE]
    assert watcher.last_good is not None and watcher.last_good.config.pool.strategy == "fastest"

    write_atomically(config_file, "pool: {strategy: throughput}\n")
    got = await events.next()
    assert isinstance(got, LoadedConfig) and got.config.pool.strategy == "throughput"


async def test_other_files_and_identical_rewrites_ignored(
    watched: tuple[ConfigWatcher, Events], config_file: Path
) -> None:
    _, events = watched
    (config_file.parent / "other.yaml").write_text("pool: {strategy: nonsense}\n", encoding="utf-8")
    write_atomically(config_file, config_file.read_text(encoding="utf-8"))  # same bytes
    write_atomically(config_file, "pool: {strategy: least-used}\n")
    got = await events.next()  # the first report is the real edit, nothing before it
    assert isinstance(got, LoadedConfig) and got.config.pool.strategy == "least-used"


async def test_failing_callback_does_not_stop_the_watch(config_file: Path) -> None:
    seen: asyncio.Queue[str] = asyncio.Queue()

    def on_change(loaded: LoadedConfig) -> None:
        seen.put_nowait(loaded.config.pool.strategy)
        raise RuntimeError("subscriber bug")

    watcher = ConfigWatcher(config_file, on_change, lambda err: None, env={})
    await watcher.start()
    try:
        write_atomically(config_file, "pool: {strategy: priority}\n")
        assert await asyncio.wait_for(seen.get(), WAIT) == "priority"
        write_atomically(config_file, "pool: {strategy: score}\n")
        assert await asyncio.wait_for(seen.get(), WAIT) == "score"
    finally:
        await watcher.stop()
    assert not watcher.running


async def test_start_stop_idempotent(config_file: Path) -> None:
    watcher = ConfigWatcher(config_file, lambda loaded: None, lambda err: None, env={})
    await watcher.stop()  # never started: no-op
    await watcher.start()
    await watcher.start()
    assert watcher.running
    await watcher.stop()
    await watcher.stop()
    assert not watcher.running


async def test_missing_directory_is_an_error(tmp_path: Path) -> None:
    watcher = ConfigWatcher(tmp_path / "nope" / "m.yaml", lambda loaded: None, lambda err: None)
    with pytest.raises(ConfigError):
        await watcher.start()
