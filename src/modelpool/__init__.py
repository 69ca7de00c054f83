"""modelpool — an LLM gateway: the model is the unit of choice, the provider an implementation detail."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Gateway", "__version__"]

if TYPE_CHECKING:
    from modelpool.gateway import Gateway


def __getattr__(name: str) -> Any:
    # Lazy: `modelpool --help` and `import modelpool` must not pay for the server stack.
    if name == "Gateway":
        from modelpool.gateway import Gateway

        return Gateway
    raise AttributeError(name)
