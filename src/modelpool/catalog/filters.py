"""Name rules of the catalog (SPEC §2): the non-chat filter, the twin rule and selectors/globs.

All functions are pure. Name patterns run against the *normalized* id (lowercase, vendor prefix
stripped), so `BAAI/bge-m3` and `bge-m3` behave alike and a vendor name in the path cannot trigger a
pattern on its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

from modelpool.catalog.normalize import normalize_model_id

# --- non-chat deny table ---------------------------------------------------------------------------
#
# Narrow on purpose: a pattern must never touch a chat model that merely mentions a modality
# (`Qwen3-VL-8B-Instruct`, `gpt-4o-audio-preview` and `gemini-2.5-flash-image` are chat). Short
# tokens are anchored on non-letters (`(?<![a-z])`, `(?![a-z])`) so `tts` does not hit a word that
# happens to contain it. Decision on OCR: an OCR model (`deepseek-ocr`, even `deepseek-ocr-chat`)
# transcribes documents rather than holding a conversation, so it is denied; a `-chat` suffix names
# its wire interface, not its ability. Listing such a model in a provider's `models:` pools it anyway,
# because config-listed ids are never filtered.
NON_CHAT_PATTERNS: tuple[tuple[str, str], ...] = (
    # embeddings and vector models
    ("embedding", r"embed"),
    ("embedding", r"(?<![a-z])bge-"),
    ("embedding", r"(?<![a-z0-9])e5-|multilingual-e5"),
    ("embedding", r"(?<![a-z])gte-"),
    ("embedding", r"(?<![a-z])m3e-"),
    ("embedding", r"^voyage-|jina-clip|text-similarity|text-search-"),
    # rerankers
    ("reranker", r"rerank"),
    # speech: ASR / TTS / realtime voice
    ("speech", r"whisper|transcribe|sensevoice|cosyvoice|paraformer|funasr"),
    ("speech", r"(?<![a-z])asr(?![a-z])"),
    ("speech", r"(?<![a-z])tts(?![a-z])|indextts|chattts|megatts"),
    ("speech", r"speech|(?<![a-z])realtime(?![a-z])"),
    # OCR / document parsing
    ("ocr", r"ocr(?![a-z])"),
    # image generation
    ("image-generation", r"(?<![a-z])flux|stable-?diffusion|sdxl|(?<![a-z0-9])sd-?3(?![0-9])"),
    ("image-generation", r"dall-e|gpt-image|(?<![a-z])z-image|qwen-image|hunyuan-?image|kolors"),
    ("image-generation", r"(?<![a-z])imagen-?\d|seedream|cogview|midjourney|ideogram|recraft|hidream"),
    ("image-generation", r"kandinsky|pixart|playground-v\d|(?<![a-z])t2i(?![a-z])|text-to-image"),
    # video generation
    ("video-generation", r"(?<![a-z])wan-?2\.|hunyuan-?video|cogvideo|ltx-?video|seedance|(?<![a-z])kling"),
    ("video-generation", r"(?<![a-z])veo-?\d|(?<![a-z])sora(?![a-z])|(?<![a-z])t?i2v(?![a-z])"),
    ("video-generation", r"(?<![a-z])t2v(?![a-z])|text-to-video|image-to-video"),
    # moderation / safety classifiers
    ("moderation", r"moderation|llama-?guard|prompt-?guard|shieldgemma|nemoguard|wildguard"),
    ("moderation", r"(?<![a-z])qwen\d*-?guard|granite-guardian|safeguard"),
    # judges and reward models
    ("judge", r"(?<![a-z])reward(?![a-z])|(?<![a-z])judge(?![a-z])|-p?rm(?:-|$)"),
)

_BUILTIN = tuple(re.compile(p) for _, p in NON_CHAT_PATTERNS)


def compile_patterns(extra: Iterable[str]) -> tuple[list[re.Pattern[str]], list[str]]:
    """Compile extra non-chat regexes (`pool.exclude_patterns`), case-insensitive.

    Returns (compiled, invalid): an invalid source is skipped, never fatal, so the caller can warn.
    """
    compiled: list[re.Pattern[str]] = []
    invalid: list[str] = []
    for source in extra:
        try:
            compiled.append(re.compile(source, re.IGNORECASE))
        except (re.error, TypeError):
            invalid.append(source)
    return compiled, invalid


def non_chat_family(model_id: str, extra: Sequence[re.Pattern[str]] = ()) -> str | None:
    """The family (`embedding`, `speech`, …, or `extra`) that denies `model_id`, or None if chat."""
    normalized = normalize_model_id(model_id)
    for (family, _), pattern in zip(NON_CHAT_PATTERNS, _BUILTIN, strict=True):
        if pattern.search(normalized):
            return family
    # Extra patterns are the user's own: they see the id as written, vendor prefix included.
    if any(p.search(model_id) or p.search(normalized) for p in extra):
        return "extra"
    return None


def is_non_chat(model_id: str, extra_patterns: Sequence[str | re.Pattern[str]] = ()) -> bool:
    """True when the name says the model cannot answer a chat turn (invalid extra patterns ignored)."""
    compiled = [p for p in extra_patterns if isinstance(p, re.Pattern)]
    compiled += compile_patterns(p for p in extra_patterns if isinstance(p, str))[0]
    return non_chat_family(model_id, compiled) is not None


# Vercel AI Gateway `type` values; `language` is the only chat type.
_VERCEL_CHAT_TYPES = frozenset({"language", "chat"})
_VERCEL_NON_CHAT_TYPES = frozenset(
    {"embedding", "reranking", "image", "video", "transcription", "speech", "realtime", "moderation"}
)
_MODALITY_ARROW = re.compile(r"->|→")


def is_chat_by_declared_type(declared: str | None) -> bool | None:
    """What a provider catalog declares, or None when it declares nothing we understand.

    Accepts a Vercel `type` (`language` = chat; `embedding|reranking|image|video|transcription|speech|
    realtime` = not) or an OpenRouter/Vercel modality string (`text+image->text`, `text→text`): chat
    when the output side contains `text`.
    """
    if not declared:
        return None
    value = declared.strip().lower()
    if value in _VERCEL_CHAT_TYPES:
        return True
    if value in _VERCEL_NON_CHAT_TYPES:
        return False
    parts = _MODALITY_ARROW.split(value)
    if len(parts) == 2:
        return "text" in re.split(r"[+,\s]+", parts[1])
    return None


def is_chat_model(model_id: str, declared: str | None, extra: Sequence[re.Pattern[str]] = ()) -> bool:
    """The filter as discovery applies it: a declared type wins over the name table."""
    verdict = is_chat_by_declared_type(declared)
    if verdict is not None:
        return verdict
    return non_chat_family(model_id, extra) is None


# --- twin rule ------------------------------------------------------------------------------------


def twin_source(provider_id: str, twin_suffixes: Iterable[str]) -> str | None:
    """The provider a twin wraps (`amd-vision` → `amd`), or None when `provider_id` is no twin.

    Only the *provider id* decides; a model id containing `vision` is an ordinary chat model. The
    longest matching suffix wins so `-vision` and `-hd-vision` can coexist; a provider id that is only
    the suffix wraps nothing and is not a twin.
    """
    lowered = provider_id.lower()
    best: str | None = None
    for suffix in twin_suffixes:
        s = suffix.lower()
        if s and lowered.endswith(s) and len(lowered) > len(s) and (best is None or len(s) > len(best)):
            best = s
    return provider_id[: -len(best)] if best else None


def is_twin_provider(provider_id: str, twin_suffixes: Iterable[str]) -> bool:
    """True when `provider_id` ends in one of `twin_suffixes` (case-insensitive)."""
    return twin_source(provider_id, twin_suffixes) is not None


# --- globs and selectors --------------------------------------------------------------------------


def has_wildcard(pattern: str) -> bool:
    return "*" in pattern or "?" in pattern


@lru_cache(maxsize=4096)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    # Only `*` and `?` are special; everything else (`.`, `[`, `/`) is literal, unlike fnmatch.
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile(body, re.IGNORECASE | re.DOTALL)


def glob_match(pattern: str, value: str) -> bool:
    """Case-insensitive match of the whole `value`: `*` any run (including `/`), `?` one char."""
    if not has_wildcard(pattern):
        return pattern.lower() == value.lower()
    return _glob_regex(pattern).fullmatch(value) is not None


def matches_selector(selector: str, route_key: str, model_id: str, normalized: str) -> bool:
    """Does `selector` name this route?

    A selector is a concrete model id, a normalized (pool) id, a `provider/model-id` route key, or a
    glob over any of those; all comparisons ignore case. Used by groups, `exclude_models` and
    `disabled`.
    """
    selector = selector.strip()
    if not selector:
        return False
    return any(glob_match(selector, candidate) for candidate in (route_key, model_id, normalized))


class SelectorSet:
    """Several selectors compiled once, for matching many routes (a catalog build): exact selectors
    are one set lookup, every glob is one alternation regex. Matching `matches_selector` one selector
    at a time cost ~0.3 s over 10,000 routes with just the two default groups (issue #21).

    Same answers as `any(matches_selector(s, …) for s in selectors)`."""

    __slots__ = ("_exact", "_globs")

    def __init__(self, selectors: Iterable[str]) -> None:
        cleaned = [s.strip() for s in selectors if s.strip()]
        self._exact = frozenset(s.lower() for s in cleaned if not has_wildcard(s))
        globs = [_glob_regex(s).pattern for s in cleaned if has_wildcard(s)]
        alternation = "|".join(f"(?:{g})" for g in globs)
        self._globs = re.compile(alternation, re.IGNORECASE | re.DOTALL) if globs else None

    def __bool__(self) -> bool:
        return bool(self._exact) or self._globs is not None

    def matches(self, route_key: str, model_id: str, normalized: str) -> bool:
        exact, globs = self._exact, self._globs
        for candidate in (route_key, model_id, normalized):
            if (exact and candidate.lower() in exact) or (globs is not None and globs.fullmatch(candidate)):
                return True
        return False
