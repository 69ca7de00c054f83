"""Files the gateway writes beside its database are replaced atomically (issue #10, crash safety): the
calendar cache and the generated admin token. A write that dies halfway leaves the previous file whole and
no temporary file behind; a reader racing the writer never sees a partial file."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import orjson
import pytest

from modelpool.periods import parse_year_doc
from modelpool.periods.cache import CacheState, load_cache, save_cache
from modelpool.periods.calendar_data import LoadedYear
from modelpool.security import load_or_create_admin_token

BUNDLED = Path(__file__).resolve().parents[2] / "src" / "modelpool" / "data" / "holiday-cn"


def cache_state(years: tuple[int, ...], stamp: float) -> CacheState:
    loaded = {
        y: LoadedYear(parse_year_doc(orjson.loads((BUNDLED / f"{y}.json").read_bytes())), stamp, "test")
        for y in years
    }
    return CacheState(years=loaded, last_sync=stamp, last_success=stamp)


def test_a_calendar_cache_write_that_dies_halfway_leaves_the_old_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "calendar.json"
    save_cache(path, cache_state((2025,), 1.0))
    before = path.read_bytes()

    def crash(fd: int) -> None:  # the process "dies" after writing the bytes, before the rename
        raise OSError("disk went away")

    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(OSError, match="disk went away"):
        save_cache(path, cache_state((2025, 2026), 2.0))
    assert path.read_bytes() == before
    assert sorted(load_cache(path).years) == [2025]
    assert [p.name for p in tmp_path.iterdir()] == ["calendar.json"]  # no temporary file left behind


def test_a_reader_racing_the_calendar_writer_never_sees_a_partial_file(tmp_path: Path) -> None:
    path = tmp_path / "calendar.json"
    small, large = cache_state((2025,), 1.0), cache_state((2024, 2025, 2026, 2027), 2.0)
    save_cache(path, small)
    done = threading.Event()
    seen: list[int] = []
    errors: list[Exception] = []

    def read() -> None:
        while not done.is_set():
            try:
                seen.append(len(load_cache(path).years))
            except Exception as exc:  # a truncated or empty file would land here
                errors.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for i in range(60):
            save_cache(path, large if i % 2 else small)
    finally:
        done.set()
        reader.join(10)
    assert errors == []
    assert set(seen) <= {1, 4} and seen


def test_the_admin_token_file_is_written_whole_with_mode_0600(tmp_path: Path) -> None:
    token, created = load_or_create_admin_token(tmp_path)
    assert created and token.startswith("mp-admin-")
    path = tmp_path / "admin_token"
    assert path.read_text() == token + "\n"
    assert path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["admin_token"]
    assert load_or_create_admin_token(tmp_path) == (token, False)


def test_an_admin_token_write_that_dies_halfway_leaves_no_token_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(fd: int) -> None:
        raise OSError("disk went away")

    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(OSError):
        load_or_create_admin_token(tmp_path)
    # No half-written token a later start would trust: the next start generates a whole one.
    assert not (tmp_path / "admin_token").exists()
    monkeypatch.undo()
    token, created = load_or_create_admin_token(tmp_path)
    assert created and (tmp_path / "admin_token").read_text() == token + "\n"
