"""Model discovery: read each provider's model list when the config does not name its models (SPEC §2).

Lists are cached per provider and refreshed on config change and on demand. A provider that cannot be
reached keeps its last known list (or none) and the failure is reported, never raised.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from modelpool.catalog import DiscoveredModel
from modelpool.catalog.model import Capabilities
from modelpool.config.schema import Config
from modelpool.upstream.client import AttemptFailure, UpstreamClient
from modelpool.upstream.providers import ProviderEndpoint

log = logging.getLogger("modelpool.discovery")
DISCOVERY_TIMEOUT = 10.0


class Discovery:
    def __init__(self, client: UpstreamClient) -> None:
        self._client = client
        self.models: dict[str, list[DiscoveredModel]] = {}
        self.errors: dict[str, str] = {}

    async def refresh(self, config: Config, endpoints: dict[str, ProviderEndpoint]) -> None:
        todo = [p.id for p in config.providers if p.models is None and p.id in endpoints]
        results = await asyncio.gather(*(self._fetch(endpoints[pid]) for pid in todo), return_exceptions=True)
        for pid, result in zip(todo, results, strict=True):
            if isinstance(result, BaseException):
                message = endpoints[pid].redact(str(result) or type(result).__name__)
                self.errors[pid] = message
                log.warning("model discovery failed for provider %s: %s", pid, message)
            else:
                self.models[pid] = result
                self.errors.pop(pid, None)

    async def _fetch(self, endpoint: ProviderEndpoint) -> list[DiscoveredModel]:
        try:
            payload = await self._client.get_json(endpoint.models_url, endpoint.headers, DISCOVERY_TIMEOUT)
        except AttemptFailure as exc:
            raise RuntimeError(f"HTTP {exc.status}: {exc.message}") from None
        except TimeoutError:
            raise RuntimeError("timeout listing models") from None
        return parse_model_list(payload)


def parse_model_list(payload: Any) -> list[DiscoveredModel]:
    """OpenAI (`data[].id`), Anthropic (`data[].id`, `type: model`) and aggregator catalogs."""
    rows = payload.get("data") if isinstance(payload, dict) else payload
    if not isinstance(rows, list):
        raise RuntimeError("model list has no 'data' array")
    out: list[DiscoveredModel] = []
    for row in rows:
        if not isinstance(row, dict) or not isinstance(row.get("id"), str):
            continue
        declared = (
            row.get("type") if isinstance(row.get("type"), str) and row.get("type") != "model" else None
        )
        # AI Studio's OpenAI-compatible list names models `models/gemini-…`; both its APIs take the bare id
        # (and the Gemini API's URL adds `models/` itself).
        model_id = row["id"].removeprefix("models/")
        out.append(DiscoveredModel(id=model_id, declared_type=declared, capabilities=_capabilities(row)))
    return out


def _capabilities(row: dict[str, Any]) -> Capabilities | None:
    meta = row.get("meta")
    # llama-server: `meta.n_ctx` is the context one request may use (a slot's), not the model's training one
    served_ctx = meta.get("n_ctx") if isinstance(meta, dict) and isinstance(meta.get("n_ctx"), int) else None
    context = row.get("context_window") or row.get("context_length") or served_ctx
    modalities = (
        (row.get("modalities") or {}).get("input") if isinstance(row.get("modalities"), dict) else None
    )
    arch = row.get("architecture")
    if modalities is None and isinstance(arch, dict):
        modalities = arch.get("input_modalities")
    tags = row.get("tags")
    params = row.get("supported_parameters")
    tags = tags if isinstance(tags, list) else []
    params = params if isinstance(params, list) else []
    tools = True if ("tool-use" in tags or "tools" in params) else None
    if not (context or modalities or tools):
        return None
    return Capabilities(
        context_window=int(context) if isinstance(context, int | float) else None,
        input_modalities=tuple(m for m in modalities if isinstance(m, str))
        if isinstance(modalities, list)
        else None,
        tools=tools,
    )
