"""`modelpool demo`: the gateway on the built-in simulated fleet, with live traffic. No keys, no network.

The fleet runs in its own thread (its own event loop), the gateway in the main thread under uvicorn, and
the traffic generator in a third thread, so each behaves as it would as a separate process.
"""

from __future__ import annotations

import asyncio
import secrets
import sys
import tempfile
import threading
import time
from typing import Any

DEMO_POOL = "deepseek-v4.1-flash"


def demo_config(fleet: Any, token: str, port: int) -> dict[str, Any]:
    cfg: dict[str, Any] = fleet.to_config()
    cfg["server"] = {"host": "127.0.0.1", "port": port, "admin_token": token}
    cfg["state"] = {"backend": "memory"}
    # The agent CLIs ask for their own model names (Claude Code's side calls use a Haiku even when the
    # main model is set): every one of them reaches the demo pool.
    cfg["aliases"] = {"claude-*": DEMO_POOL, "gpt-*": DEMO_POOL, "o[0-9]*": DEMO_POOL, "codex-*": DEMO_POOL}
    cfg["holidays"] = {"source": "bundled"}  # the demo makes no request beyond loopback
    cfg["pool"] = {"strategy": "fastest", "retry_backoff": "100ms", "cooldown": "10s"}
    # Demo timing: failures show up within seconds, not minutes.
    cfg["timeouts"] = {"first_byte": "5s", "idle": "10s"}
    return cfg


def run_demo(port: int, rate: float, duration: float | None, traffic: bool) -> int:
    import uvicorn

    from modelpool.cli.serve import configure_logging
    from modelpool.config import load_config
    from modelpool.gateway import Gateway
    from modelpool.sim import FleetThread, demo_fleet

    configure_logging("warning")
    token = "mp-demo-" + secrets.token_urlsafe(8)
    with (
        tempfile.TemporaryDirectory(prefix="modelpool-demo-") as state_dir,
        FleetThread(demo_fleet()) as fleet,
    ):
        env = {"MODELPOOL_STATE_DIR": state_dir}
        gw = Gateway(load_config(demo_config(fleet, token, port), env=env), env=env)
        server = uvicorn.Server(
            uvicorn.Config(
                gw.asgi_app, host="127.0.0.1", port=port, loop="uvloop", log_level="warning", access_log=False
            )
        )
        stop = threading.Event()
        if duration is not None and not traffic:
            threading.Timer(duration, lambda: setattr(server, "should_exit", True)).start()
        traffic_thread = (
            threading.Thread(target=_traffic, args=(server, port, rate, duration, stop), daemon=True)
            if traffic
            else None
        )
        if traffic_thread is not None:
            traffic_thread.start()
        _banner(port, token, fleet, traffic)
        try:
            server.run()
        finally:
            stop.set()
            if traffic_thread is not None:
                traffic_thread.join(timeout=70)
    return 0 if server.started else 1


def _banner(port: int, token: str, fleet: Any, traffic: bool) -> None:
    url = f"http://127.0.0.1:{port}"
    print(f"modelpool demo — gateway on {url}  (simulated fleet: {', '.join(fleet.fleet.provider_ids)})")
    print(f"  admin token: {token}")
    print(f"  dashboard: open {url}/ and log in with the admin token")
    print(f"  pool: {DEMO_POOL} (3 routes, one of them an aggregator with 22 inner providers)")
    print("  try:")
    print(f"    curl -sN {url}/v1/chat/completions -H 'content-type: application/json' \\")
    body = f'{{"model": "{DEMO_POOL}", "stream": true, "messages": [{{"role": "user", "content": "hi"}}]}}'
    print(f"      -d '{body}'")
    print("  try an agent (it writes the file the prompt names; README: 'Try an agent on the demo'):")
    claude = "claude -p 'create hello.txt' --allowedTools Write"
    print(f"    ANTHROPIC_BASE_URL={url} ANTHROPIC_AUTH_TOKEN=demo {claude}")
    print(f"    modelpool sessions --url {url} --token {token}")
    print(f"    modelpool status --url {url} --token {token}")
    print(f"    modelpool models --url {url} --token {token}")
    if traffic:
        print("  demo traffic is running (a line every 5 s); Ctrl-C to stop")
    sys.stdout.flush()


def _traffic(server: Any, port: int, rate: float, duration: float | None, stop: threading.Event) -> None:
    """Send demo traffic; with a duration, let the calls in flight finish, then stop the server."""
    from modelpool.sim import TrafficStats, run_traffic

    while not server.started:
        if stop.wait(0.05):
            return
    stats = TrafficStats()

    async def main() -> None:
        task = asyncio.create_task(
            run_traffic(
                f"http://127.0.0.1:{port}/v1",
                DEMO_POOL,
                rate=rate,
                duration=duration,
                sessions=8,
                api_key=None,
                stats=stats,
            )
        )
        last = time.monotonic()
        while not stop.is_set() and not task.done():
            await asyncio.sleep(0.2)
            if time.monotonic() - last >= 5:
                last = time.monotonic()
                _report(stats)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        _report(stats)

    asyncio.run(main())
    server.should_exit = True


def _report(stats: Any) -> None:
    s = stats.summary()
    routes = ", ".join(f"{r}={n}" for r, n in sorted(s["routes"].items(), key=lambda kv: -kv[1]))
    print(
        f"  traffic: {s['sent']} sent, {s['ok']} ok, {s['switched']} switched, "
        f"{s['http_errors'] + s['incomplete'] + s['connection_errors']} failed — {routes}"
    )
    sys.stdout.flush()
