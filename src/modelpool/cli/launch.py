"""`modelpool launch claude|codex|gemini` — an agent CLI wired to this gateway, knowing the model (SPEC §1.7).

What each CLI needs is built by `cli/launch_<cli>.py` as a `Setup`: environment variables, files in a
private home (the user's own configuration layered under modelpool's, never edited), extra arguments.
`--print` shows that setup instead of running it. The pool's facts (window, efforts, modalities) come from
the running gateway's `/v1/models`, so the CLI sizes itself to the routes that will serve it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from modelpool.cli import launch_claude, launch_codex, launch_gemini
from modelpool.cli.launch_setup import Context, Setup, fail
from modelpool.cli.remote import gateway_url

NPM = {
    "claude": "@anthropic-ai/claude-code",
    "codex": "@openai/codex",
    "gemini": "@google/gemini-cli",
}
NO_KEY = "modelpool"  # sent when the gateway needs no client key: the CLIs refuse to start without one


def find_cli(cli: str, given: str | None) -> str:
    if given:
        if not Path(given).exists():
            fail(f"{given}: no such file (--cli)")
        return given
    found = shutil.which(cli)
    if found is None:
        fail(f"`{cli}` is not installed (not on PATH). Install it with:  npm install -g {NPM[cli]}")
    return found


def client_key(config: Path | None) -> str:
    """`MODELPOOL_API_KEY`, else the config's first client key, else any string (the gateway needs none)."""
    if os.environ.get("MODELPOOL_API_KEY"):
        return os.environ["MODELPOOL_API_KEY"]
    from modelpool.config import ConfigError, load_config
    from modelpool.config.prices import key_secret

    try:
        keys = load_config(config).config.server.api_keys
    except ConfigError:
        return NO_KEY
    return key_secret(keys[0]) if keys else NO_KEY


def fetch_models(url: str, key: str) -> list[dict[str, Any]]:
    req = urllib.request.Request(url + "/v1/models", headers={"Authorization": f"Bearer {key}"})
    try:
        with urllib.request.urlopen(req, timeout=15) as resp:
            rows = json.loads(resp.read())["data"]
    except urllib.error.HTTPError as err:
        hint = " (set MODELPOOL_API_KEY to a client key)" if err.code == 401 else ""
        fail(f"GET {url}/v1/models → HTTP {err.code}{hint}")
    except (urllib.error.URLError, OSError, ValueError, KeyError) as err:
        fail(f"cannot reach the gateway at {url} ({err}); is `modelpool serve` running? (--url)")
    return list(rows)


def pick_pool(rows: list[dict[str, Any]], wanted: str | None) -> dict[str, Any]:
    if not rows:
        fail("the gateway serves no pool")
    if wanted is None:
        row = rows[0]
        if len(rows) > 1:
            print(f"modelpool launch: pool {row['id']} (choose another with --pool)", file=sys.stderr)
        return row
    for row in rows:
        if row["id"] == wanted:
            return row
    fail(f"no pool {wanted!r}; the gateway serves: {', '.join(r['id'] for r in rows)}")


def private_home(cli: str, pool: str) -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "modelpool" / "launch"
    safe = "".join(c if c.isalnum() or c in "-._" else "_" for c in pool)
    return base / cli / safe


def builders() -> dict[str, Callable[[Context], Setup]]:
    return {"claude": launch_claude.setup, "codex": launch_codex.setup, "gemini": launch_gemini.setup}


def launch(
    cli: str,
    pool: str | None,
    url: str | None,
    cli_path: str | None,
    show: bool,
    args: list[str],
    config: Path | None,
) -> int:
    if cli not in NPM:
        fail(f"unknown CLI {cli!r}; choose one of {', '.join(NPM)}")
    binary = find_cli(cli, cli_path)
    base = gateway_url(url)
    key = client_key(config)
    row = pick_pool(fetch_models(base, key), pool)
    home = private_home(cli, str(row["id"]))
    ctx = Context(cli, binary, base, key, row, home, Path.home())
    setup = builders()[cli](ctx)
    if show:
        print(render(ctx, setup, args))
        return 0
    write(setup)
    env = {k: v for k, v in os.environ.items() if k not in setup.unset}
    env.update(setup.env)
    proc = subprocess.run([binary, *setup.args, *args], env=env)
    return int(proc.returncode)


def write(setup: Setup) -> None:
    for path, target in setup.links.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            shutil.rmtree(path)
        path.symlink_to(target)
    for path, text in setup.files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink():
            path.unlink()  # never write through a link into the user's own file
        path.write_text(text)


def render(ctx: Context, setup: Setup, args: list[str]) -> str:
    """The exact setup, for users who wire the CLI themselves (the key is shown as given: it is theirs)."""
    out = [f"# modelpool launch {ctx.cli}: pool {ctx.model}, window {ctx.window or 'unknown'}"]
    out += [f"unset {k}" for k in setup.unset]
    for k, v in setup.env.items():
        # The client key is the user's own: shown as a placeholder, never echoed into a terminal's scrollback.
        shown = "<your modelpool client key>" if v == ctx.key and ctx.key != NO_KEY else v
        out.append(f"export {k}={_quote(shown)}")
    for path, text in setup.files.items():
        out += ["", f"# {path}", text.rstrip("\n")]
    if setup.links:
        out += ["", "# links to your own files (read and written by the CLI as usual):"]
        out += [f"#   {p} -> {t}" for p, t in setup.links.items()]
    out += ["", " ".join(_quote(a) for a in [ctx.binary, *setup.args, *args])]
    return "\n".join(out)


def _quote(value: str) -> str:
    import shlex

    return shlex.quote(value)
