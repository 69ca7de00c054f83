"""What the agent CLIs must know about a pool (SPEC §1.7): Codex's catalogue entry, Claude Code's window,
Gemini CLI's settings. Pure data in, data out — read from a `/v1/models` row, so the gateway (answering
Codex's `model_catalog_url`) and `modelpool launch` (talking to a running gateway) build the same thing."""
