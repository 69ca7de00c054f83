"""Claude Code wired to the gateway (SPEC §1.7).

Claude Code reads nothing about windows from a gateway: for a model id it does not know it assumes 1M
tokens and compacts too late. `CLAUDE_CODE_MAX_CONTEXT_TOKENS` is the one way to tell it the pool's
window. Its configuration goes in a private `CLAUDE_CONFIG_DIR`: the user's `settings.json` with
modelpool's `env` and `model` laid over it (an `env` block in the user's settings would otherwise win
over the process environment), a copy of their `.claude.json`, and links to everything else of theirs
(credentials, projects and history stay theirs).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from modelpool.cli.launch_setup import Context, Setup, link_user_files, merged, read_json

OWN = {"settings.json", ".claude.json"}
SECRETS = {"ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY"}


def user_dir(ctx: Context) -> Path:
    given = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(given) if given else ctx.user_home / ".claude"


def setup(ctx: Context) -> Setup:
    env = {
        "ANTHROPIC_BASE_URL": ctx.url,
        "ANTHROPIC_AUTH_TOKEN": ctx.key,
        "ANTHROPIC_MODEL": ctx.model,
        # Claude Code's side calls (titles, summaries) and subagents ask for a small model: the pool too.
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": ctx.model,
        "ANTHROPIC_SMALL_FAST_MODEL": ctx.model,
    }
    if ctx.window:
        env["CLAUDE_CODE_MAX_CONTEXT_TOKENS"] = str(ctx.window)
    mine = user_dir(ctx)
    own = read_json(mine / "settings.json")
    # The key stays in the environment, never on disk: the user's settings lose what would replace it.
    own.pop("apiKeyHelper", None)
    if isinstance(own.get("env"), dict):
        own["env"] = {k: v for k, v in own["env"].items() if k not in SECRETS}
    shown = {k: v for k, v in env.items() if k not in SECRETS}
    settings = merged(own, {"env": shown, "model": ctx.model})
    # Without CLAUDE_CONFIG_DIR the global state file is ~/.claude.json; with it, inside that folder.
    state_file = (
        mine / ".claude.json" if os.environ.get("CLAUDE_CONFIG_DIR") else ctx.user_home / ".claude.json"
    )
    files = {ctx.home / "settings.json": json.dumps(settings, indent=2) + "\n"}
    if state_file.is_file():
        files[ctx.home / ".claude.json"] = state_file.read_text()
    return Setup(
        env={**env, "CLAUDE_CONFIG_DIR": str(ctx.home)},
        files=files,
        links=link_user_files(mine, ctx.home, OWN),
        unset=["ANTHROPIC_API_KEY"],  # would be sent instead of the client key
    )
