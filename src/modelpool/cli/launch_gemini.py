"""Gemini CLI wired to the gateway (SPEC §1.7): API-key auth (no Google sign-in), usage statistics off,
`GOOGLE_GEMINI_BASE_URL` at the gateway and the pool as its model.

Its home is private (`GEMINI_CLI_HOME`): `.gemini/settings.json` is the user's with modelpool's settings laid
over it; everything else in their `.gemini` folder (history, extensions) is linked, so it stays theirs.
"""

from __future__ import annotations

import json

from modelpool.cli.launch_setup import Context, Setup, link_user_files, merged, read_json

SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
}


def setup(ctx: Context) -> Setup:
    mine = ctx.user_home / ".gemini"
    private = ctx.home / ".gemini"
    settings = merged(read_json(mine / "settings.json"), SETTINGS)
    return Setup(
        env={
            "GEMINI_CLI_HOME": str(ctx.home),
            "GEMINI_API_KEY": ctx.key,
            "GOOGLE_GEMINI_BASE_URL": ctx.url,
        },
        files={private / "settings.json": json.dumps(settings, indent=2) + "\n"},
        links=link_user_files(mine, private, {"settings.json"}),
        args=["-m", ctx.model],
        unset=["GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT"],
    )
