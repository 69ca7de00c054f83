"""The catalog: which routes exist, how they pool, and which pool a client's model name means (SPEC §2)."""

from modelpool.catalog.build import DiscoveredModel, build_catalog, model_info_for, route_capabilities
from modelpool.catalog.catalog import Catalog, UnknownModel
from modelpool.catalog.filters import (
    NON_CHAT_PATTERNS,
    compile_patterns,
    glob_match,
    is_chat_by_declared_type,
    is_chat_model,
    is_non_chat,
    is_twin_provider,
    matches_selector,
    non_chat_family,
    twin_source,
)
from modelpool.catalog.model import Capabilities, Pool, Route, union_capabilities
from modelpool.catalog.normalize import normalize_model_id
from modelpool.catalog.status import EXCLUDED, NON_CHAT, PROVIDER, SWITCHED_OFF, TWIN, StatusRules

__all__ = [
    "EXCLUDED",
    "NON_CHAT",
    "NON_CHAT_PATTERNS",
    "PROVIDER",
    "SWITCHED_OFF",
    "TWIN",
    "Capabilities",
    "Catalog",
    "DiscoveredModel",
    "Pool",
    "Route",
    "StatusRules",
    "UnknownModel",
    "build_catalog",
    "compile_patterns",
    "glob_match",
    "is_chat_by_declared_type",
    "is_chat_model",
    "is_non_chat",
    "is_twin_provider",
    "matches_selector",
    "model_info_for",
    "non_chat_family",
    "normalize_model_id",
    "route_capabilities",
    "twin_source",
    "union_capabilities",
]
