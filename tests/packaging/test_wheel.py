"""`pip install .` ships a working product: the wheel carries every dashboard asset and the holiday snapshot,
its version is `modelpool.__version__`, and `python -m modelpool` runs from it (not from the checkout).

One test, because building the wheel is the slow part (a few seconds; pip fetches the build backend into an
isolated build environment as `pip install .` does).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import httpx
import yaml

import modelpool
from gateway_server import free_port

ROOT = Path(__file__).parents[2]
PACKAGE = ROOT / "src" / "modelpool"


def _build_wheel(tmp_path: Path) -> Path:
    # Build from a copy: setuptools writes build/ and *.egg-info next to the sources it builds.
    src = tmp_path / "src-copy"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "dist")
    shutil.copytree(ROOT / "src", src / "src", ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    dist = tmp_path / "dist"
    res = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(src), "-w", str(dist), "--no-deps", "-q"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    (wheel,) = dist.glob("modelpool-*.whl")
    return wheel


def _data_files() -> set[str]:
    """Every non-Python file the package needs at run time, as wheel paths."""
    found = set()
    for folder in (PACKAGE / "data", PACKAGE / "server" / "dashboard" / "static"):
        for path in folder.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                found.add(path.relative_to(PACKAGE.parent).as_posix())
    return found


def test_the_wheel_is_the_whole_product(tmp_path: Path) -> None:
    wheel = _build_wheel(tmp_path)
    assert wheel.name.startswith(f"modelpool-{modelpool.__version__}-")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        metadata = zf.read(f"{dist_info}/METADATA").decode()
        entry_points = zf.read(f"{dist_info}/entry_points.txt").decode()
        zf.extractall(tmp_path / "site")
    assert _data_files() - names == set()  # every dashboard asset and calendar file is inside
    assert any(n.startswith("modelpool/data/holiday-cn/") and n.endswith(".json") for n in names)
    assert {"modelpool/py.typed", "modelpool/__main__.py"} <= names
    assert f"\nVersion: {modelpool.__version__}\n" in metadata
    assert "modelpool = modelpool.cli.main:run" in entry_points

    # Run from the unpacked wheel alone (third-party dependencies from this interpreter).
    site = tmp_path / "site"
    env = {k: v for k, v in os.environ.items() if k != "MODELPOOL_CONFIG"} | {"PYTHONPATH": str(site)}
    where = subprocess.run(
        [sys.executable, "-c", "import modelpool; print(modelpool.__file__)"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert where.stdout.strip() == str(site / "modelpool" / "__init__.py")
    version = subprocess.run(
        [sys.executable, "-m", "modelpool", "--version"], env=env, capture_output=True, text=True
    )
    assert version.stdout.strip() == f"modelpool {modelpool.__version__}"

    config = tmp_path / "modelpool.yaml"
    config.write_text(
        yaml.safe_dump({"providers": [], "holidays": {"source": "bundled"}, "state": {"backend": "memory"}})
    )
    period = subprocess.run(
        [
            sys.executable,
            "-m",
            "modelpool",
            "period",
            "--config",
            str(config),
            "--at",
            "2026-10-01T10:00:00+08:00",
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    assert "国庆节" in period.stdout, period.stderr  # the holiday snapshot read from the wheel's package data

    port = free_port()
    serve = subprocess.Popen(
        [sys.executable, "-m", "modelpool", "serve", "--config", str(config), "--port", str(port)],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                login = httpx.get(f"http://127.0.0.1:{port}/", timeout=1)  # the login page, no token yet
                css = httpx.get(f"http://127.0.0.1:{port}/static/app.css", timeout=1)
                break
            except httpx.HTTPError:
                assert serve.poll() is None and time.monotonic() < deadline, "serve did not come up"
                time.sleep(0.1)
        assert (
            login.text == (PACKAGE / "server/dashboard/static/login.html").read_text()
        )  # served from the wheel
        assert (
            css.status_code == 200 and css.text == (PACKAGE / "server/dashboard/static/app.css").read_text()
        )
    finally:
        serve.terminate()
        serve.communicate(timeout=15)
