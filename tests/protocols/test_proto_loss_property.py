"""Translation never loses silently (SPEC §1.6): a property test over generated and recorded request bodies.

For every client body and every translation a relay performs (responses→chat, responses→Anthropic,
Anthropic→chat, chat→Anthropic, Gemini→chat, Gemini→Anthropic, and chat, Anthropic and Responses → Gemini
(those two through the chat body)),
everything in the body is either carried into the translated body or named by `loss.translation_losses`:

- every free-text value is a unique sentinel token; each must appear in the translated body or sit under
  a path a loss names;
- every key whose value holds no sentinel (a knob: `top_k`, `cache_control`, `is_error`, `detail`, …) must
  appear as a key of the translated body, be one the pair renames (`RENAMED`), or sit under a loss;
- objects get random unknown keys: the translators drop them, so a loss must name each;
- a body the translator refuses (400) must have a loss that changes the answer (so the route is demoted
  before any attempt is refused).

The generators are in `loss_bodies.py`; the corpus bodies (tests/protocols/corpus/requests/) are modelled on
the requests Claude Code and Codex send (written from their documented shapes, not captured from the CLIs).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from loss_bodies import BODIES

from modelpool.protocols.errors import ClientError
from modelpool.protocols.loss import Loss, translation_losses
from modelpool.protocols.translate_any import translate_request_for

REQUESTS = Path(__file__).parent / "corpus" / "requests"
TOKEN = re.compile(r"Q[0-9a-f]{10}Q")
PAIRS = [
    ("responses", "openai"),
    ("responses", "anthropic"),
    ("anthropic", "openai"),
    ("openai", "anthropic"),
    ("gemini", "openai"),
    ("gemini", "anthropic"),
    ("openai", "gemini"),
    ("anthropic", "gemini"),
    ("responses", "gemini"),
]

# Keys a translation carries under another name (or folds into a structure), by pair. Keys that only shape
# structure (`type`, `role`, …) are in `STRUCTURAL`. Their sentinel values are still checked.
STRUCTURAL = {"type", "role", "content", "id", "status", "model", "messages", "input", "stream"}
RENAMED: dict[tuple[str, str], set[str]] = {
    ("responses", "openai"): {
        "max_output_tokens",  # max_tokens
        "instructions",  # a system message
        "effort",  # reasoning_effort
        "reasoning",
        "format",  # response_format, or a custom tool's description
        "text",
        "store",  # store: false is what a translated call does anyway
        "include",  # reasoning.encrypted_content: signed reasoning comes back encrypted
        "safety_identifier",  # user
        "action",  # local_shell_call → function arguments
        "working_directory",
        "output",
        "call_id",
        "encrypted_content",
        "summary",
        "syntax",  # a custom tool's grammar goes into its description
    },
    ("anthropic", "openai"): {
        "stop_sequences",  # stop
        "thinking",  # reasoning_effort
        "budget_tokens",
        "output_config",
        "effort",
        "metadata",  # user
        "user_id",
        "input_schema",  # parameters
        "disable_parallel_tool_use",  # parallel_tool_calls
        "tool_use_id",  # tool_call_id
        "is_error",
        "source",
        "media_type",
        "title",  # filename
        "system",
    },
    ("openai", "anthropic"): {
        "max_completion_tokens",  # max_tokens
        "stop",  # stop_sequences
        "user",  # metadata.user_id
        "reasoning_effort",  # thinking / output_config.effort
        "reasoning",
        "effort",
        "stream_options",  # Anthropic streams always carry usage; the chat encoder honours include_usage
        "include_usage",
        "n",  # n: 1 is what an Anthropic route does (n > 1 is a loss)
        "parallel_tool_calls",  # disable_parallel_tool_use
        "tool_calls",  # tool_use blocks
        "function",
        "parameters",  # input_schema
        "arguments",
        "tool_call_id",  # tool_use_id
        "response_format",  # output_config.format
        "json_schema",
        "thinking_blocks",
        "image_url",
        "file",
        "file_data",
        "refusal",
        "url",
    },
}
# Gemini goes through the chat body (protocols/gemini/to_chat.py); the URL's model and stream are structural.
RENAMED[("gemini", "openai")] = {
    "contents",  # messages
    "parts",
    "systemInstruction",  # a system message
    "generationConfig",
    "topP",  # top_p
    "maxOutputTokens",  # max_tokens
    "stopSequences",  # stop
    "presencePenalty",
    "frequencyPenalty",
    "candidateCount",  # n
    "responseJsonSchema",  # response_format
    "responseSchema",
    "responseMimeType",
    "thinkingConfig",  # reasoning_effort
    "thinkingBudget",
    "thinkingLevel",
    "includeThoughts",
    "thought",  # reasoning_content
    "functionDeclarations",  # tools
    "parametersJsonSchema",  # parameters
    "functionCall",  # tool_calls
    "args",  # arguments
    "functionResponse",  # a tool message
    "response",
    "inlineData",  # image_url
    "mimeType",
    "toolConfig",  # tool_choice
    "functionCallingConfig",
    "mode",
    "allowedFunctionNames",
}
RENAMED[("openai", "gemini")] = {
    "messages",  # contents, systemInstruction
    "max_tokens",  # maxOutputTokens
    "max_completion_tokens",
    "top_p",  # topP
    "stop",  # stopSequences
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "n",  # candidateCount
    "response_format",  # responseMimeType / responseJsonSchema
    "json_schema",
    "schema",
    "reasoning_effort",  # thinkingConfig
    "reasoning",
    "effort",
    "thinking",
    "stream_options",  # a Gemini stream always carries usageMetadata
    "include_usage",
    "tool_calls",  # functionCall parts
    "function",
    "parameters",  # parametersJsonSchema
    "arguments",  # args
    "tool_call_id",  # functionResponse.id
    "tool_choice",  # toolConfig
    "reasoning_content",  # thought parts
    "image_url",  # inlineData / fileData
    "url",
    "file",
    "file_data",
}
# Through the chat body: what reaching chat renames, then what chat→Gemini renames.
RENAMED[("anthropic", "gemini")] = RENAMED[("anthropic", "openai")] | RENAMED[("openai", "gemini")]
RENAMED[("gemini", "anthropic")] = RENAMED[("gemini", "openai")] | {"temperature", "topP", "parameters"}
RENAMED[("responses", "gemini")] = RENAMED[("responses", "openai")] | RENAMED[("openai", "gemini")]
RENAMED[("responses", "anthropic")] = (
    RENAMED[("responses", "openai")]
    | RENAMED[("openai", "anthropic")]
    | {"user", "parallel_tool_calls", "tool_choice", "file_data", "image_url"}
)


def covered(path: str, losses: list[Loss]) -> bool:
    return any(path == x.at or path.startswith((x.at + ".", x.at + "[")) for x in losses)


def _walk(value: Any, path: str) -> list[tuple[str, str | None, Any]]:
    """(path, key, value) of every dict entry and list element, depth first."""
    out: list[tuple[str, str | None, Any]] = []
    if isinstance(value, dict):
        for k, v in value.items():
            p = f"{path}.{k}" if path else k
            out.append((p, k, v))
            out += _walk(v, p)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            p = f"{path}[{i}]"
            out.append((p, None, v))
            out += _walk(v, p)
    return out


def _keys(value: Any) -> set[str]:
    """Keys anywhere in `value`, function arguments (JSON in a string) included."""
    keys: set[str] = set()
    for _, k, v in _walk(value, ""):
        if k is not None:
            keys.add(k)
        if isinstance(v, str) and v.startswith("{"):
            try:
                keys |= _keys(orjson.loads(v))
            except orjson.JSONDecodeError:
                pass
    return keys


def _empty(v: Any) -> bool:
    return v is None or v is False or v in ([], {}, "", {"enabled": False})  # nothing to carry


def check_no_silent_loss(ingress: str, body: dict[str, Any], target: str) -> None:
    losses = translation_losses(ingress, body, target)
    try:
        out = translate_request_for(ingress, body, target)
    except ClientError as err:
        assert any(x.changes_answer for x in losses), (
            f"refused ({err.message}) but no loss changes the answer"
        )
        return
    dump = orjson.dumps(out).decode()
    out_keys = _keys(out)
    renamed = RENAMED[(ingress, target)]
    for path, key, value in _walk(body, ""):
        if covered(path, losses):
            continue
        if isinstance(value, str):
            for token in TOKEN.findall(value):
                assert token in dump, f"{ingress}→{target}: {path} ({token}) lost silently"
        if key is None or key in STRUCTURAL or key in out_keys or key in renamed or _empty(value):
            continue
        if TOKEN.search(orjson.dumps(value).decode()):
            continue  # its sentinels are checked where they sit
        if isinstance(value, dict | list) and any(x.at.startswith((path + ".", path + "[")) for x in losses):
            continue  # what it holds is named part by part
        raise AssertionError(f"{ingress}→{target}: key {path} = {value!r} lost silently")


@pytest.mark.parametrize(("ingress", "target"), PAIRS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_generated_bodies_lose_nothing_silently(ingress: str, target: str, data: st.DataObject) -> None:
    check_no_silent_loss(ingress, unique_tokens(data.draw(BODIES[ingress])), target)


def unique_tokens(body: dict[str, Any]) -> dict[str, Any]:
    """Every sentinel distinct (shrinking makes them equal, and one would then vouch for another)."""
    count = iter(range(10**9))
    raw = TOKEN.sub(lambda _: f"Q{next(count):010x}Q", orjson.dumps(body).decode())
    return orjson.loads(raw)  # type: ignore[no-any-return]


def _corpus() -> list[tuple[str, str, str]]:
    cases = []
    for path in sorted(REQUESTS.glob("*.json")):
        ingress = path.name.split("_", 1)[0]
        for src, target in PAIRS:
            if src == ingress:
                cases.append((path.name, ingress, target))
    return cases


# Free-text values of the recorded bodies become sentinels so the check can follow them.
FREE_TEXT = {
    "text",
    "thinking",
    "signature",
    "data",
    "input",
    "arguments",
    "output",
    "instructions",
    "description",
    "call_id",
    "tool_use_id",
    "user_id",
    "definition",
    "content",
    "reasoning_content",
    "system",
}


def sentinelized(value: Any, key: str | None = None, count: list[int] | None = None) -> Any:
    count = count if count is not None else [0]
    if isinstance(value, dict):
        return {k: sentinelized(v, k, count) for k, v in value.items()}
    if isinstance(value, list):
        return [sentinelized(v, key, count) for v in value]
    if isinstance(value, str) and key in FREE_TEXT and not value.startswith("{"):
        count[0] += 1
        prefix = value[:8] if value.startswith("mp1.") else ""
        return f"{prefix}Q{count[0]:010x}Q"
    return value


@pytest.mark.parametrize(("name", "ingress", "target"), _corpus())
def test_recorded_client_bodies_lose_nothing_silently(name: str, ingress: str, target: str) -> None:
    body = orjson.loads((REQUESTS / name).read_bytes())
    check_no_silent_loss(ingress, sentinelized(body), target)


def test_the_check_catches_a_silent_loss() -> None:
    """The property can fail: a body whose `top_k` the loss list would not name is caught."""
    body = {
        "model": "m",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "Q0123456789Q"}],
        "top_k": 5,
    }
    check_no_silent_loss("anthropic", body, "openai")  # named: passes
    import modelpool.protocols.loss as loss

    real = loss.translation_losses
    try:
        loss_fn = lambda i, b, t: [x for x in real(i, b, t) if x.field != "top_k"]  # noqa: E731
        globals()["translation_losses"] = loss_fn
        with pytest.raises(AssertionError, match="top_k"):
            check_no_silent_loss("anthropic", body, "openai")
    finally:
        globals()["translation_losses"] = real
