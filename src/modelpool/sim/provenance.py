"""Opaque reasoning blobs that name who made them, and the checks real providers make on what comes back.

Anthropic signs thinking blocks and OpenAI encrypts reasoning items; either provider rejects a blob it did
not produce. The sim's blobs carry the producing provider's id, so a provider can reject another one's
(what a gateway must handle by demoting that route for the call). Blobs the sim did not make — recorded
from the real services, or made up by a test — are accepted: the sim cannot tell.

A provider with `strict=True` (the default) also refuses what the real Messages API refuses:
`context_management` without the `context-management-…` beta in `anthropic-beta`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Any

from multidict import CIMultiDictProxy

from modelpool.sim.errors import SimError, bad_request
from modelpool.sim.request import CallRequest

_MARK = "modelpool-sim"
ENCRYPTED_PREFIX = "gAAAAB"  # OpenAI's encrypted reasoning looks like a Fernet token


def seal(provider_id: str, model_id: str, text: str, prefix: str = "") -> str:
    digest = hashlib.sha256(text.encode()).hexdigest()[:32]
    raw = f"{_MARK}|{provider_id}|{model_id}|{digest}".encode()
    return prefix + base64.urlsafe_b64encode(raw).decode()


def sealed_by(blob: Any, prefix: str = "") -> str | None:
    """The sim provider that made `blob`, or None when the sim did not make it."""
    if not isinstance(blob, str) or not blob.startswith(prefix):
        return None
    try:
        raw = base64.urlsafe_b64decode(blob[len(prefix) :].encode()).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    parts = raw.split("|")
    return parts[1] if len(parts) == 4 and parts[0] == _MARK else None


def check(provider_id: str, req: CallRequest, headers: CIMultiDictProxy[str]) -> None:
    if req.dialect == "anthropic":
        _check_betas(req, headers)
        _check_signatures(provider_id, req)
    elif req.dialect == "responses":
        _check_encrypted(provider_id, req)
    elif req.dialect == "gemini":
        _check_thought_signatures(provider_id, req)


def _check_betas(req: CallRequest, headers: CIMultiDictProxy[str]) -> None:
    betas = ",".join(headers.getall("anthropic-beta", []))
    if "context_management" in req.body and "context-management-" not in betas:
        raise bad_request("context_management: Extra inputs are not permitted")


def _check_signatures(provider_id: str, req: CallRequest) -> None:
    for i, message in enumerate(req.body.get("messages") or []):
        content = message.get("content") if isinstance(message, dict) else None
        for j, block in enumerate(content if isinstance(content, list) else []):
            if not isinstance(block, dict) or block.get("type") != "thinking":
                continue
            maker = sealed_by(block.get("signature"))
            if maker is not None and maker != provider_id:
                raise bad_request(f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block")


def _check_thought_signatures(provider_id: str, req: CallRequest) -> None:
    for i, content in enumerate(req.body.get("contents") or []):
        parts = content.get("parts") if isinstance(content, dict) else None
        for j, part in enumerate(parts if isinstance(parts, list) else []):
            blob = (
                part.get("thoughtSignature") or part.get("thought_signature")
                if isinstance(part, dict)
                else None
            )
            maker = sealed_by(blob)
            if maker is not None and maker != provider_id:
                raise bad_request(f"contents[{i}].parts[{j}]: Thought signature is not valid.")


def _check_encrypted(provider_id: str, req: CallRequest) -> None:
    items = req.body.get("input")
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict) or item.get("type") != "reasoning":
            continue
        maker = sealed_by(item.get("encrypted_content"), ENCRYPTED_PREFIX)
        if maker is not None and maker != provider_id:
            msg = f"The encrypted content for item {item.get('id')} could not be verified."
            raise SimError(400, msg, "invalid_request_error", "invalid_encrypted_content")
