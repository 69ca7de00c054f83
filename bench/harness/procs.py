"""Child processes of a benchmark run: the simulated fleet, the gateway, LiteLLM's proxy.

Each child runs in its own session (process group), so teardown can signal the child *and* anything it
spawned by the child's own id, never by name. Output goes to log files in the run's temp dir; the tail
is printed when a child fails to come up, because a silent readiness timeout is useless to debug.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ADMIN_TOKEN = "bench-admin-token"  # fixed: the harness owns the gateway and may query /admin/*
# One client key for every proxy under test: LiteLLM refuses to start without a master key, so modelpool
# checks one too (`server.api_keys`) and both pay for authenticating the client. Loopback-only, throwaway.
CLIENT_KEY = "sk-bench-5f0c9a7e3b2d4c1a8e6f0b9d7c5a3e1f"
LITELLM_VERSION = "1.108.7"
LITELLM_INSTALL = f"pip install 'litellm[proxy]=={LITELLM_VERSION}'"
_CLK_TCK = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def free_port() -> int:
    """A port the kernel just handed out on loopback (tiny race until the child binds it; fine on a
    loopback-only benchmark)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tcp_active_opens() -> int | None:
    """Machine-wide count of TCP connections opened so far (/proc/net/snmp `Tcp: ActiveOpens`).

    The delta over a block, divided by its calls, shows connection churn: with keep-alive everywhere it
    stays near 0; a proxy that drops its upstream connection after some calls shows up here. Machine-wide,
    so anything else opening connections meanwhile is counted too."""
    try:
        lines = [line.split() for line in Path("/proc/net/snmp").read_text().splitlines()]
    except OSError:
        return None
    tcp = [row for row in lines if row and row[0] == "Tcp:"]
    if len(tcp) < 2:
        return None
    return int(dict(zip(tcp[0][1:], tcp[1][1:], strict=True))["ActiveOpens"])


def _run_time(pid: str, stat: list[bytes]) -> float:
    """CPU seconds of one process: the sum of its threads' schedstat run times (ns), or its stat ticks."""
    try:
        ns = 0
        for task in os.scandir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task.name}/schedstat", "rb") as f:
                ns += int(f.read().split()[0])
        # A thread that exits takes its run time with it; the processes measured here keep theirs (the
        # event loop's, its executor's) for the whole run.
        return ns / 1e9
    except (OSError, ValueError, IndexError):
        return (int(stat[11]) + int(stat[12])) / _CLK_TCK


@dataclass
class Child:
    name: str
    proc: subprocess.Popen[bytes]
    log_path: Path
    url: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def _group(self) -> Iterator[tuple[str, list[bytes]]]:
        """(pid, the /proc stat fields after the command name) of every live process in the child's group
        (uvicorn/gunicorn workers included: start_new_session made the child its group leader)."""
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    raw = f.read()
                rest = raw[raw.rfind(b")") + 2 :].split()  # the command name may contain spaces
                if int(rest[2]) == self.pid:  # pgrp
                    yield entry.name, rest
            except (OSError, ValueError, IndexError):
                continue

    def cpu_seconds(self) -> float:
        """user+system CPU of every live process in the child's group.

        Read from /proc: each thread's scheduler run time (`task/*/schedstat`, nanoseconds) where the kernel
        keeps it, else utime+stime in clock ticks (10 ms: a block of a dozen short calls may read as none).
        0.0 where /proc is unavailable."""
        total = 0.0
        for pid, rest in self._group():
            total += _run_time(pid, rest)
        return total

    def rss_mb(self) -> float | None:
        """Resident memory (MB) of every live process in the child's group, from /proc (None: no /proc)."""
        total = 0
        seen = False
        for pid, _ in self._group():
            try:
                with open(f"/proc/{pid}/statm", "rb") as f:
                    total += int(f.read().split()[1])  # resident pages
                seen = True
            except (OSError, ValueError, IndexError):
                continue
        return total * _PAGE / 2**20 if seen else None

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM the child's process group, then SIGKILL what is left after `grace` seconds."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGTERM)
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                pass
        # The leader may be gone while a worker it forked lingers: kill the group regardless.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(2.0)


class RssSampler:
    """RSS of some children every `interval` seconds in a background thread: memory over a whole run
    (reading /proc takes a few ms; at 1-2 samples/s it stays out of the measurements' way)."""

    def __init__(self, children: list[Child], interval: float = 1.0) -> None:
        self.children = children
        self.interval = interval
        self.series: list[tuple[float, str, float]] = []  # (seconds since start, child, MB)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)
        self._t0 = time.monotonic()

    def start(self) -> RssSampler:
        self._thread.start()
        return self

    def stop(self) -> list[tuple[float, str, float]]:
        self._stop.set()
        self._thread.join(5)
        self._sample()  # the end of the run is always in the series, however short the run
        return self.series

    def _run(self) -> None:
        self._sample()
        while not self._stop.wait(self.interval):
            self._sample()

    def _sample(self) -> None:
        for child in self.children:
            mb = child.rss_mb()
            if mb is not None:
                self.series.append((round(time.monotonic() - self._t0, 2), child.name, round(mb, 1)))


class Children:
    """Owns every child of the run; `stop_all` is idempotent and called from `finally`."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.items: list[Child] = []

    def spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> Child:
        log_path = self.workdir / f"{name}.log"
        log = open(log_path, "wb")  # noqa: SIM115 - lives as long as the child; closed by the OS at exit
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
            start_new_session=True,
            cwd=self.workdir,
        )
        child = Child(name, proc, log_path)
        self.items.append(child)
        return child

    def stop_all(self) -> None:
        # Reverse order: clients of the fleet (gateway, LiteLLM) go before the fleet.
        for child in reversed(self.items):
            child.stop()
        self.items.clear()


def wait_until(what: str, child: Child, check: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not child.alive():
            raise RuntimeError(f"{what} exited with {child.proc.returncode}:\n{child.log_tail()}")
        if check():
            return
        time.sleep(0.1)
    raise TimeoutError(f"{what} not ready after {timeout:.0f}s:\n{child.log_tail()}")


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


# ---- the simulated fleet -----------------------------------------------------------------------------


def start_sim(children: Children, preset: str = "bench") -> tuple[Child, dict[str, Any]]:
    """`modelpool sim --preset bench` in its own process (fast mode: no think time), so the upstream never
    competes with the gateway or the load generator for one event loop. Returns the child and the
    modelpool config the fleet wrote (provider ids → base URLs)."""
    config_path = children.workdir / "sim.yaml"
    argv = [sys.executable, "-m", "modelpool.cli.main", "sim", "--preset", preset]
    child = children.spawn("sim", [*argv, "--config-out", str(config_path)])
    # The fleet prints "config written to" after the file is complete: wait for that, not the file.
    wait_until("the simulated fleet", child, lambda: "config written to" in child.log_tail(5), 30)
    config = yaml.safe_load(config_path.read_text())
    child.extra["config"] = config
    return child, config


def provider_base_url(sim_config: dict[str, Any], provider_id: str) -> str:
    for p in sim_config["providers"]:
        if p["id"] == provider_id:
            if p["kind"] == "anthropic":
                raise ValueError(f"{provider_id} speaks the Anthropic dialect; pick an OpenAI-kind provider")
            return str(p["base_url"]).rstrip("/")
    raise KeyError(f"the sim fleet has no provider {provider_id!r}")


def provider_root_url(sim_config: dict[str, Any], provider_id: str) -> str:
    """The provider's root (no `/v1`): where the sim's control surface `/_sim/*` lives."""
    for p in sim_config["providers"]:
        if p["id"] == provider_id:
            return str(p["base_url"]).rstrip("/").removesuffix("/v1")
    raise KeyError(f"the sim fleet has no provider {provider_id!r}")


def set_sim_faults(root_url: str, faults: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Replace a sim provider's scripted faults (`[]` clears them); returns the faults now in force."""
    req = urllib.request.Request(
        f"{root_url}/_sim/faults",
        data=json.dumps(faults).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=5) as resp:
        reply = json.loads(resp.read())
    if not reply.get("ok"):
        raise RuntimeError(f"{root_url}/_sim/faults refused the fault list: {reply}")
    return list(reply.get("faults", []))


def http_json(url: str, token: str | None = None, timeout: float = 10.0) -> Any:
    """GET a JSON document (admin API with `token` as bearer, the sim's control surface without)."""
    headers = {"authorization": f"Bearer {token}"} if token else {}
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout) as resp:
        return json.loads(resp.read())


# ---- the gateway --------------------------------------------------------------------------------------


def gateway_config(
    sim_config: dict[str, Any],
    strategy: str,
    sticky: bool = True,
    *,
    providers: list[str] | None = None,
    dialects: list[str] | None = None,
    overrides: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The sim's providers plus what a benchmark needs fixed: memory state (no sqlite writes behind the
    calls), a known admin token, the bench client key, loopback only.

    `providers` keeps only those sim providers (in that order); `dialects` declares what every kept
    provider speaks (e.g. `["openai"]`: a chat-only pool in front of a fleet that speaks more, so an
    Anthropic or Responses client is translated); `overrides` replaces whole top-level sections last
    (e.g. `{"holidays": {"source": "bundled"}}`)."""
    config: dict[str, Any] = {
        "server": {"host": "127.0.0.1", "admin_token": ADMIN_TOKEN, "api_keys": [CLIENT_KEY]},
        "state": {"backend": "memory"},
        # Every bench call carries the same prompt, so the gateway sees one conversation and its sticky
        # pin keeps it on one route whatever the strategy: `sticky=False` lets the strategy choose.
        "pool": {"strategy": strategy, "sticky": sticky},
        **{k: v for k, v in sim_config.items() if k not in ("server", "state", "pool")},
    }
    from modelpool.config.schema import Config  # the schema of the tree under test decides what exists

    if "holidays" in Config.model_fields:
        # Loopback only: the holiday calendar would otherwise be fetched from the internet at start-up.
        config["holidays"] = {"sync": False}
    if providers is not None:
        by_id = {p["id"]: p for p in config["providers"]}
        missing = [pid for pid in providers if pid not in by_id]
        if missing:
            raise KeyError(f"the sim fleet has no provider(s) {missing}; it has {sorted(by_id)}")
        config["providers"] = [by_id[pid] for pid in providers]
    if dialects is not None:
        config["providers"] = [{**p, "dialects": list(dialects)} for p in config["providers"]]
    config.update(overrides or {})
    return config


def start_gateway(
    children: Children,
    sim_config: dict[str, Any],
    strategy: str,
    sticky: bool = True,
    *,
    providers: list[str] | None = None,
    dialects: list[str] | None = None,
    overrides: dict[str, Any] | None = None,
    name: str = "gateway",
    env: dict[str, str] | None = None,
    head: list[str] | None = None,
) -> Child:
    """`name` names its log/config files (several gateways in one run); `env` adds to its environment;
    `head` replaces the `modelpool` command (e.g. a probed server, bench/harness/probed_serve.py)."""
    config = gateway_config(
        sim_config, strategy, sticky, providers=providers, dialects=dialects, overrides=overrides
    )
    config_path = children.workdir / f"{name}.yaml"
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    port = free_port()
    if head is None:
        exe = shutil.which("modelpool")
        head = [exe] if exe else [sys.executable, "-m", "modelpool.cli.main"]
    argv = [*head, "serve", "--config", str(config_path), "--port", str(port), "--log-level", "warning"]
    child = children.spawn(name, argv, env={"MODELPOOL_ADMIN_TOKEN": ADMIN_TOKEN, **(env or {})})
    child.url = f"http://127.0.0.1:{port}"
    wait_until("the gateway", child, lambda: http_ok(f"{child.url}/readyz"), 30)
    return child


def start_floor(
    children: Children, upstream_api_root: str, server: str = "uvicorn", name: str = "floor"
) -> Child:
    """The bare relay of `floor_relay.py`: what uvicorn (or granian) + aiohttp cost with no gateway logic
    at all. `upstream_api_root` is the upstream's `…/v1`: the floor forwards every path below it as it
    came."""
    port = free_port()
    script = Path(__file__).with_name("floor_relay.py")
    child = children.spawn(name, [sys.executable, str(script), upstream_api_root, str(port), server])
    child.url = f"http://127.0.0.1:{port}"
    wait_until("the floor relay", child, lambda: http_ok(f"{child.url}/readyz"), 30)
    return child


# ---- LiteLLM (optional) -------------------------------------------------------------------------------


def find_litellm(cmd: str | None) -> str | None:
    """The `litellm` executable: `--litellm-cmd` if given, else whatever is on PATH."""
    if cmd:
        path = shutil.which(cmd) or (cmd if os.access(cmd, os.X_OK) else None)
        if path is None:
            raise FileNotFoundError(f"--litellm-cmd {cmd!r} is not an executable")
        return path
    return shutil.which("litellm")


def start_litellm(children: Children, exe: str, model: str, upstream_base: str) -> Child:
    """LiteLLM's proxy, one worker, `model` mapped to the same simulated upstream as an `openai/` model."""
    config = {
        "model_list": [
            {
                "model_name": model,
                "litellm_params": {
                    "model": f"openai/{model}",
                    "api_base": upstream_base,
                    "api_key": "sk-sim",
                },
            }
        ],
        "litellm_settings": {"telemetry": False, "drop_params": True},
        "general_settings": {"master_key": CLIENT_KEY},
    }
    config_path = children.workdir / "litellm.yaml"
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    port = free_port()
    argv = [exe, "--config", str(config_path), "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--num_workers", "1"]
    env = {
        # Loopback only: use the bundled model cost map instead of fetching it from GitHub at startup.
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_LOG": "ERROR",
        "LITELLM_TELEMETRY": "False",
        "DISABLE_SCHEMA_UPDATE": "True",
    }
    child = children.spawn("litellm", argv, env=env)
    child.url = f"http://127.0.0.1:{port}"
    # LiteLLM imports a lot before it listens: allow a generous start.
    wait_until("LiteLLM", child, lambda: http_ok(f"{child.url}/health/liveliness"), 120)
    return child


def log_errors(child: Child) -> int:
    """Errors a child logged during the run (the gateway logs at warning: each one is worth a look)."""
    text = child.log_path.read_text(errors="replace")
    return text.count(" ERROR ") + text.count("Traceback (most recent call last)")


def cleanup_workdir(workdir: Path, keep: bool) -> None:
    """Remove the run's logs and configs, unless the user asked to keep them."""
    if keep:
        print(f"logs and configs kept in {workdir}")
        return
    for f in workdir.iterdir():
        f.unlink()
    workdir.rmdir()
