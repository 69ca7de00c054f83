"""`modelpool …` — the command line (SPEC §1.3).

Imports of the server stack happen inside the commands so `modelpool --help` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

app = typer.Typer(
    name="modelpool",
    help="An LLM gateway: name a model once, modelpool picks the provider for every call.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    # Plain help: rendering it with rich costs ~160 ms of imports on every `modelpool --help`.
    rich_markup_mode=None,
)
config_app = typer.Typer(help="Configuration tools.", no_args_is_help=True, rich_markup_mode=None)
app.add_typer(config_app, name="config")

ConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", "-c", help="Config file (default: $MODELPOOL_CONFIG, ./modelpool.yaml)."),
]
UrlOpt = Annotated[
    str | None, typer.Option("--url", help="Gateway URL (default: $MODELPOOL_URL or http://127.0.0.1:4000).")
]
TokenOpt = Annotated[
    str | None,
    typer.Option("--token", help="Admin token (default: $MODELPOOL_ADMIN_TOKEN or the state dir)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


def _print_version(value: bool) -> None:
    if value:
        from modelpool import __version__  # the one place the version is written (pyproject reads it)

        typer.echo(f"modelpool {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool | None,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = None,
) -> None:
    """An LLM gateway: name a model once, modelpool picks the provider for every call."""


@app.command()
def serve(
    config: ConfigOpt = None,
    host: Annotated[str | None, typer.Option(help="Bind address (default from config: 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default from config: 4000).")] = None,
    workers: Annotated[int, typer.Option(help="Worker processes.")] = 1,
    log_level: Annotated[
        str | None, typer.Option(help="debug | info | warning | error (default: logging.level, info)")
    ] = None,
    log_format: Annotated[
        str | None,
        typer.Option(help="auto | json | text (default: logging.format; auto = JSON unless a terminal)"),
    ] = None,
    http_server: Annotated[
        str | None,
        typer.Option(
            envvar="MODELPOOL_HTTP_SERVER",
            help="uvicorn | granian (default: server.http_server, uvicorn)",
        ),
    ] = None,
) -> None:
    """Run the gateway."""
    from modelpool.cli.serve import run_serve

    raise typer.Exit(run_serve(config, host, port, workers, log_level, log_format, http_server))


@app.command()
def demo(
    port: Annotated[int, typer.Option(help="Gateway port.")] = 4000,
    rate: Annotated[float, typer.Option(help="Demo traffic: calls per second.")] = 2.0,
    duration: Annotated[
        float | None, typer.Option(help="Stop after this many seconds (default: run until Ctrl-C).")
    ] = None,
    no_traffic: Annotated[bool, typer.Option("--no-traffic", help="Do not generate demo traffic.")] = False,
) -> None:
    """Run the gateway on the built-in simulated fleet with live traffic; no keys needed."""
    from modelpool.cli.demo import run_demo

    raise typer.Exit(run_demo(port=port, rate=rate, duration=duration, traffic=not no_traffic))


@app.command()
def sim(
    preset: Annotated[
        str, typer.Option(help="demo | two-route | bench | bench-native | agent | roster | …")
    ] = "demo",
    host: Annotated[str, typer.Option(help="Bind address.")] = "127.0.0.1",
    config_out: Annotated[
        Path | None, typer.Option("--config-out", help="Write a modelpool config for this fleet.")
    ] = None,
    base_port: Annotated[
        int | None, typer.Option("--base-port", help="First port (default: free ports).")
    ] = None,
    json: Annotated[bool, typer.Option("--json", help="Print the providers as one JSON line.")] = False,
) -> None:
    """Run only the simulated provider fleet (for tests and benchmarks)."""
    import asyncio

    from modelpool.sim import run_sim
    from modelpool.sim.fleet import new_event_loop

    try:
        with asyncio.Runner(loop_factory=new_event_loop) as runner:
            runner.run(
                run_sim(preset=preset, host=host, base_port=base_port, config_out=config_out, as_json=json)
            )
    except KeyboardInterrupt:
        pass


@app.command()
def models(
    url: UrlOpt = None, token: TokenOpt = None, json: JsonOpt = False, config: ConfigOpt = None
) -> None:
    """Pools, routes, capabilities and state badges."""
    from modelpool.cli.remote import admin_get
    from modelpool.cli.render import print_json, render_pools

    data = admin_get("/admin/pools", url, token, config)
    print_json(data) if json else render_pools(data)


@app.command()
def usage(
    by: Annotated[str, typer.Option("--by", help="pool | route | key | day")] = "pool",
    since: Annotated[str | None, typer.Option("--since", help="ISO 8601 date or time (UTC day)")] = None,
    until: Annotated[str | None, typer.Option("--until", help="ISO 8601 date or time (UTC day)")] = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Calls, tokens and cost by pool, route, client key or day."""
    from urllib.parse import urlencode

    from modelpool.cli.remote import admin_get
    from modelpool.cli.render import print_json
    from modelpool.cli.usage import render_usage

    query = urlencode({k: v for k, v in {"group_by": by, "since": since, "until": until}.items() if v})
    data = admin_get(f"/admin/usage?{query}", url, token, config)
    print_json(data) if json else render_usage(data)


@app.command()
def sessions(
    session: Annotated[str | None, typer.Argument(help="A session id: list its calls.")] = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Sessions with their calls and cost so far; with an ID, that session's calls."""
    from urllib.parse import quote

    from modelpool.cli.remote import admin_get
    from modelpool.cli.render import print_json
    from modelpool.cli.sessions import render_session, render_sessions

    if session is None:
        data = admin_get("/admin/sessions", url, token, config)
        print_json(data) if json else render_sessions(data)
    else:
        data = admin_get(f"/admin/sessions/{quote(session, safe='')}", url, token, config)
        print_json(data) if json else render_session(data)


@app.command()
def keys(url: UrlOpt = None, token: TokenOpt = None, json: JsonOpt = False, config: ConfigOpt = None) -> None:
    """Client keys by name or short hash, with their limits and spend."""
    from modelpool.cli.remote import admin_get
    from modelpool.cli.render import print_json
    from modelpool.cli.usage import render_keys

    data = admin_get("/admin/keys", url, token, config)
    print_json(data) if json else render_keys(data)


@app.command()
def status(
    url: UrlOpt = None, token: TokenOpt = None, json: JsonOpt = False, config: ConfigOpt = None
) -> None:
    """Enabled state, config, state backend, pools, rests, last failures and what is in force."""
    from modelpool.cli.remote import admin_get
    from modelpool.cli.render import print_json, render_status

    data = admin_get("/admin/status", url, token, config)
    print_json(data) if json else render_status(data)


@app.command()
def pin(
    route: Annotated[
        str | None, typer.Argument(help="Route key `provider/model` to put at the head of its pool.")
    ] = None,
    clear: Annotated[bool, typer.Option("--clear", help="Remove the pool's pin.")] = False,
    pool: Annotated[str | None, typer.Option(help="Pool id (default: the route's pool).")] = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Pin the head of the order for a pool; the ranking decides the tail."""
    from modelpool.cli.remote import admin_request
    from modelpool.cli.render import print_json

    if clear == (route is not None):
        typer.echo("give a ROUTE, or --clear with --pool", err=True)
        raise typer.Exit(2)
    body = {"pool": pool, "clear": True} if clear else {"route": route, "pool": pool}
    data = admin_request(
        "POST", "/admin/pin", url, token, config, {k: v for k, v in body.items() if v is not None}
    )
    if json:
        print_json(data)
    elif data.get("route"):
        typer.echo(f"pinned {data['route']} at the head of pool {data['pool']}")
    else:
        typer.echo(f"pin cleared for pool {data['pool']}")


@app.command()
def probe(
    models: Annotated[list[str] | None, typer.Argument(help="Pools or routes (default: every pool).")] = None,
    max_requests: Annotated[int, typer.Option(help="At most this many requests (quota spent).")] = 16,
    timeout: Annotated[float, typer.Option(help="Seconds per probe.")] = 20.0,
    url: UrlOpt = None,
    token: TokenOpt = None,
    json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Bounded minimal live requests that refresh TTFT, throughput and cooldowns."""
    from modelpool.cli.probe import run_probe

    run_probe(models or [], max_requests, timeout, url, token, config, json)


@app.command()
def rank(
    model: Annotated[
        str, typer.Argument(help="Aggregator model (e.g. deepseek/deepseek-v4.1-flash-1017) or pool.")
    ],
    refresh: Annotated[
        bool, typer.Option("--refresh", help="Drop cached stats and fetch them again.")
    ] = False,
    session: Annotated[str | None, typer.Option(help="Served-by line for this session.")] = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """The aggregator's inner providers, fastest first, with the served-by line for the latest session."""
    from modelpool.cli.rank import run_rank

    run_rank(model, refresh, session, url, token, json, config)


@app.command()
def period(
    at: Annotated[str | None, typer.Option("--at", help="ISO 8601 moment (default: now).")] = None,
    json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Peak or idle at a moment, the next flip, and why. Works without a running gateway."""
    from modelpool.cli.periods import run_period

    run_period(at, json, config)


@app.command()
def calendar(
    action: Annotated[str | None, typer.Argument(help="`sync` to refresh now.")] = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Statutory calendar status for the current year; `calendar sync` refreshes it now."""
    from modelpool.cli.periods import run_calendar

    if action not in (None, "sync"):
        typer.echo("usage: modelpool calendar [sync]", err=True)
        raise typer.Exit(2)
    run_calendar(action == "sync", url, token, json, config)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def launch(
    ctx: typer.Context,
    cli: Annotated[str, typer.Argument(help="claude | codex | gemini")],
    pool: Annotated[str | None, typer.Option("--pool", help="The pool (default: the first served).")] = None,
    url: UrlOpt = None,
    cli_path: Annotated[
        str | None, typer.Option("--cli", help="The CLI's executable (default: on PATH).")
    ] = None,
    show: Annotated[
        bool, typer.Option("--print", help="Print the variables and files instead of running.")
    ] = False,
    config: ConfigOpt = None,
) -> None:
    """Run an agent CLI wired to this gateway, knowing the model (arguments after `--` go to the CLI)."""
    from modelpool.cli.launch import launch as run_launch

    raise typer.Exit(run_launch(cli, pool, url, cli_path, show, list(ctx.args), config))


@app.command()
def mcp(url: UrlOpt = None, token: TokenOpt = None, config: ConfigOpt = None) -> None:
    """MCP server over stdio (agent tools: status, probe, pin, rank, period) for a running gateway."""
    from modelpool.cli.remote import admin_token, gateway_url
    from modelpool.mcp.stdio import run_stdio

    run_stdio(gateway_url(url), admin_token(token, config))


@config_app.command("check")
def config_check(
    file: Annotated[Path | None, typer.Argument(help="Config file to validate.")] = None,
    json: JsonOpt = False,
) -> None:
    """Validate a config file and print every error with its key path."""
    from modelpool.cli.render import print_json
    from modelpool.config import ConfigError, load_config

    try:
        loaded = load_config(file)
    except ConfigError as err:
        if json:
            print_json({"valid": False, "errors": err.errors})
        else:
            typer.echo("invalid configuration:", err=True)
            for line in err.errors:
                typer.echo(f"  {line}", err=True)
        raise typer.Exit(1) from None
    result: dict[str, Any] = {
        "valid": True,
        "path": str(loaded.path) if loaded.path else None,
        "providers": [p.id for p in loaded.config.providers],
        "warnings": loaded.warnings,
    }
    if json:
        print_json(result)
        return
    typer.echo(f"valid: {result['path'] or '(no file: providers from the environment)'}")
    typer.echo(f"providers: {', '.join(result['providers']) or '(none)'}")
    for w in loaded.warnings:
        typer.echo(f"warning: {w}")


@config_app.command("import-litellm")
def config_import_litellm(
    file: Annotated[Path, typer.Argument(help="A LiteLLM proxy config.yaml.")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write the modelpool config here.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite OUT if it exists.")] = False,
    json: JsonOpt = False,
) -> None:
    """Convert a LiteLLM proxy config (model_list, router_settings, fallbacks) and report what did not map."""
    from modelpool.cli.litellm import run_import

    raise typer.Exit(run_import(file, out, force, json))


def run() -> None:
    app()


if __name__ == "__main__":
    run()
