"""The routing core assembled (`Engine`) and the operator actions that run on it (probe, replica sync)."""

from modelpool.engine.core import Engine
from modelpool.engine.observer import CallObserver, NoObserver

__all__ = ["CallObserver", "Engine", "NoObserver"]
