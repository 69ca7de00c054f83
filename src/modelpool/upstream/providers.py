"""Provider endpoints: URL building and authentication per provider kind (SPEC §0, §1.5).

A provider's `base_url` is its API root as the provider documents it, with or without a version
segment (`https://api.deepseek.com`, `https://api.openai.com/v1`, `https://open.bigmodel.cn/api/paas/v4`):
we add `/v1` only when the URL does not already end in a version segment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from modelpool.config.schema import ProviderConfig

_VERSION_TAIL = re.compile(r"/v\d+(?:beta|alpha)?\d*$")
ANTHROPIC_VERSION = "2023-06-01"


def api_root(base_url: str) -> str:
    """`https://api.deepseek.com` → `https://api.deepseek.com/v1`; `…/v1/` → `…/v1`."""
    root = base_url.rstrip("/")
    if _VERSION_TAIL.search(root):
        return root
    return root + "/v1"


@dataclass(frozen=True, slots=True)
class ProviderEndpoint:
    """Everything needed to call one provider; built once per config version, read per attempt."""

    id: str
    kind: str
    name: str
    root: str
    headers: tuple[tuple[str, str], ...] = field(repr=False)  # auth + configured extra headers
    has_key: bool
    api_key: str | None = field(default=None, repr=False)  # aggregators' stats calls; never logged

    @property
    def aggregator(self) -> bool:
        return self.kind in ("vercel", "openrouter")

    @property
    def speaks_anthropic(self) -> bool:
        return self.kind == "anthropic"

    @property
    def chat_url(self) -> str:
        return self.root + "/chat/completions"

    @property
    def messages_url(self) -> str:
        return self.root + "/messages"

    @property
    def models_url(self) -> str:
        return self.root + "/models"

    def redact(self, text: str) -> str:
        """Remove any credential of this provider from a text before it is logged or returned."""
        for name, value in self.headers:
            if name.lower() in ("authorization", "x-api-key") and value:
                secret = value.removeprefix("Bearer ")
                if len(secret) >= 4:
                    text = text.replace(secret, "***")
        return text


def build_endpoint(provider: ProviderConfig, api_key: str | None) -> ProviderEndpoint:
    headers: list[tuple[str, str]] = []
    if provider.kind == "anthropic":
        if api_key:
            headers.append(("x-api-key", api_key))
        headers.append(("anthropic-version", ANTHROPIC_VERSION))
    elif api_key:
        headers.append(("Authorization", f"Bearer {api_key}"))
    headers.extend(provider.headers.items())
    return ProviderEndpoint(
        id=provider.id,
        kind=provider.kind,
        name=provider.display_name,
        root=api_root(provider.base_url),
        headers=tuple(headers),
        has_key=bool(api_key),
        api_key=api_key,
    )
