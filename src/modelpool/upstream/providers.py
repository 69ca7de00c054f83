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
    dialects: tuple[str, ...] = ("openai",)  # SPEC §1.6, in the provider's order of preference
    roots: tuple[tuple[str, str], ...] = ()  # (dialect, API root) where a dialect has its own root
    anthropic_headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)  # auth for /messages
    gemini_headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)  # auth for the Gemini API

    @property
    def aggregator(self) -> bool:
        return self.kind in ("vercel", "openrouter")

    @property
    def speaks_anthropic(self) -> bool:
        """Anthropic is the only dialect this route speaks (it cannot take a translated OpenAI call)."""
        return self.dialects == ("anthropic",)

    def speaks(self, dialect: str) -> bool:
        return dialect in self.dialects

    def root_for(self, dialect: str) -> str:
        for d, root in self.roots:
            if d == dialect:
                return root
        return self.root

    def url_for(self, dialect: str, model: str = "", stream: bool = False) -> str:
        """The upstream URL of a call in `dialect` (which this route must speak); a Gemini URL names the
        model and the method."""
        if dialect == "gemini":
            method = ":streamGenerateContent?alt=sse" if stream else ":generateContent"
            return f"{self.root_for('gemini')}/models/{model}{method}"
        if dialect == "anthropic":
            return self.root_for("anthropic") + "/messages"
        if dialect == "responses":
            return self.root_for("responses") + "/responses"
        return self.root_for("openai") + "/chat/completions"

    def headers_for(self, dialect: str) -> tuple[tuple[str, str], ...]:
        if dialect == "gemini":
            return self.gemini_headers
        return self.anthropic_headers if dialect == "anthropic" else self.headers

    @property
    def chat_url(self) -> str:
        return self.url_for("openai")

    @property
    def messages_url(self) -> str:
        return self.url_for("anthropic")

    @property
    def count_tokens_url(self) -> str:
        return self.url_for("anthropic") + "/count_tokens"

    @property
    def models_url(self) -> str:
        return self.root + "/models"

    def redact(self, text: str) -> str:
        """Remove any credential of this provider from a text before it is logged or returned."""
        for name, value in (*self.headers, *self.anthropic_headers, *self.gemini_headers):
            if name.lower() in ("authorization", "x-api-key", "x-goog-api-key") and value:
                secret = value.removeprefix("Bearer ")
                if len(secret) >= 4:
                    text = text.replace(secret, "***")
        return text


def build_endpoint(provider: ProviderConfig, api_key: str | None) -> ProviderEndpoint:
    anthropic = _anthropic_auth(provider.kind, api_key)
    if provider.kind == "anthropic":
        headers = list(anthropic)
    else:
        headers = [("Authorization", f"Bearer {api_key}")] if api_key else []
    headers.extend(provider.headers.items())
    anthropic.extend(provider.headers.items())
    gemini = [("x-goog-api-key", api_key)] if api_key else []
    gemini.extend(provider.headers.items())
    roots: dict[str, str] = {d: api_root(url) for d, url in provider.base_urls.items()}
    root = api_root(provider.base_url)
    if provider.kind == "gemini":
        root, roots = gemini_roots(provider.base_url, roots)
    return ProviderEndpoint(
        id=provider.id,
        kind=provider.kind,
        name=provider.display_name,
        root=root,
        headers=tuple(headers),
        has_key=bool(api_key),
        api_key=api_key,
        dialects=provider.effective_dialects,
        roots=tuple(roots.items()),
        anthropic_headers=tuple(anthropic),
        gemini_headers=tuple(gemini),
    )


def gemini_roots(base_url: str, roots: dict[str, str]) -> tuple[str, dict[str, str]]:
    """AI Studio's two roots from its base URL: the Gemini API at `/v1beta` and its OpenAI-compatible
    API at `/v1beta/openai` (the openai dialect's root, where chat calls and the model list go)."""
    base = base_url.rstrip("/")
    native = base if _VERSION_TAIL.search(base) else base + "/v1beta"
    roots = {"gemini": native, **roots}
    openai = roots.get("openai") or native + "/openai"
    return openai, roots


def _anthropic_auth(kind: str, api_key: str | None) -> list[tuple[str, str]]:
    """Auth for a Messages call. Anthropic itself takes `x-api-key` (a bearer token there means OAuth);
    the Anthropic-compatible roots of other providers (DeepSeek, Vercel, OpenRouter) document one or the
    other, so they get both."""
    headers: list[tuple[str, str]] = []
    if api_key:
        headers.append(("x-api-key", api_key))
        if kind != "anthropic":
            headers.append(("Authorization", f"Bearer {api_key}"))
    headers.append(("anthropic-version", ANTHROPIC_VERSION))
    return headers
